import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDemoPage, DEMO_OUT_DIR } from '../demo-ui/build.js';
import { buildReplayPage, REPLAY_OUT_DIR } from '../replay-ui/build.js';
import { bundlePage } from '../ui-build/bundle-page.js';

const HERE = dirname(fileURLToPath(import.meta.url));

/** Where the gateway looks for the bundle: `<package>/dist/dashboard-assets`. */
export const DASHBOARD_OUT_DIR = join(HERE, '..', 'dist', 'dashboard-assets');

/**
 * Bundles the dashboard page with esbuild: `index.html`, `app.js` (the page, uPlot included) and `app.css`
 * (the page's styles and uPlot's), minified, with no reference to any other origin, so the page works offline.
 * Files are written to a temporary folder first and renamed into place one by one, so a gateway serving the
 * folder never reads a half-written file.
 *
 * @param outDir - the output folder; default {@link DASHBOARD_OUT_DIR}.
 * @returns the file names written.
 * @throws the esbuild error when the source does not compile.
 */
export function buildDashboard(outDir: string = DASHBOARD_OUT_DIR): Promise<string[]> {
  // The page takes `sluice` (its key patterns) from source: the browser suites build it on a fresh clone, before
  // any `npm run build` wrote the library's dist.
  return bundlePage({
    sourceDir: HERE,
    outDir,
    alias: { sluice: join(HERE, '..', '..', 'sluice', 'src', 'core', 'index.ts') },
  });
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = await buildDashboard(process.argv[2]);
  console.log(`dashboard bundle: ${files.join(', ')} in ${process.argv[2] ?? DASHBOARD_OUT_DIR}`);
  // The browser demo of `sluice demo` is built with the dashboard: one build step for the gateway's pages.
  if (process.argv[2] === undefined) {
    const demo = await buildDemoPage();
    console.log(`demo page bundle: ${demo.join(', ')} in ${DEMO_OUT_DIR}`);
    const replay = await buildReplayPage();
    console.log(`replay report page bundle: ${replay.join(', ')} in ${REPLAY_OUT_DIR}`);
  }
}
