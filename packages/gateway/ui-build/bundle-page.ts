import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';

/** What {@link bundlePage} builds: one browser page of the gateway (the dashboard, the browser demo). */
export interface PageBundle {
  /** The folder holding `src/main.ts` and `index.html`. */
  readonly sourceDir: string;
  /** The output folder. */
  readonly outDir: string;
  /** esbuild import aliases (the demo page can take `sluice/client` from source). */
  readonly alias?: Record<string, string>;
}

/**
 * Bundles a page with esbuild: `index.html` beside `app.js` (and `app.css` when the page imports styles),
 * minified, for the browsers the gateway's pages support, with no reference to any other origin. Files are written
 * to a temporary folder first and renamed into place one by one, so a gateway serving the folder never reads a
 * half-written file.
 *
 * @returns the file names written.
 * @throws the esbuild error when the source does not compile.
 */
export async function bundlePage(page: PageBundle): Promise<string[]> {
  mkdirSync(page.outDir, { recursive: true });
  const tmp = mkdtempSync(join(dirname(page.outDir), '.page-build-'));
  try {
    await build({
      entryPoints: { app: join(page.sourceDir, 'src', 'main.ts') },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: ['chrome109', 'firefox115', 'safari16'],
      minify: true,
      legalComments: 'eof',
      outdir: tmp,
      logLevel: 'warning',
      alias: page.alias ?? {},
    });
    copyFileSync(join(page.sourceDir, 'index.html'), join(tmp, 'index.html'));
    const files = readdirSync(tmp).sort();
    for (const f of files) renameSync(join(tmp, f), join(page.outDir, f));
    return files;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
