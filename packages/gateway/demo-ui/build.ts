import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundlePage } from '../ui-build/bundle-page.js';

const HERE = dirname(fileURLToPath(import.meta.url));

/** Where `sluice demo` looks for the page: `<package>/dist/demo-assets`. */
export const DEMO_OUT_DIR = join(HERE, '..', 'dist', 'demo-assets');

/**
 * Bundles the browser demo with esbuild: `index.html` and `app.js` (the page with `sluice/client` inside), with
 * no reference to any other origin. `fromSource` resolves `sluice/client` to the TypeScript sources (tests run
 * before any build); otherwise the package's built `dist` is bundled, as a user's bundler would.
 *
 * @param outDir - the output folder; default {@link DEMO_OUT_DIR}.
 * @returns the file names written.
 * @throws the esbuild error when the source does not compile.
 */
export function buildDemoPage(
  outDir: string = DEMO_OUT_DIR,
  options: { fromSource?: boolean } = {},
): Promise<string[]> {
  return bundlePage({
    sourceDir: HERE,
    outDir,
    alias:
      options.fromSource === true
        ? { 'sluice/client': join(HERE, '..', '..', 'sluice', 'src', 'client', 'index.ts') }
        : {},
  });
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = await buildDemoPage(process.argv[2]);
  console.log(`demo page bundle: ${files.join(', ')} in ${process.argv[2] ?? DEMO_OUT_DIR}`);
}
