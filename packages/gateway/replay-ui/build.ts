import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundlePage } from '../ui-build/bundle-page.js';

const HERE = dirname(fileURLToPath(import.meta.url));

/** Where `sluice replay --html` finds the page: `<package>/dist/replay-assets`. */
export const REPLAY_OUT_DIR = join(HERE, '..', 'dist', 'replay-assets');

/**
 * Bundles the page of `sluice replay --html` with esbuild: `index.html`, `app.js` (the page, with the dashboard's
 * chart and uPlot inside) and `app.css`. The command inlines the three into one self-contained file with the
 * report's data.
 *
 * @param outDir - the output folder; default {@link REPLAY_OUT_DIR}.
 * @returns the file names written.
 * @throws the esbuild error when the source does not compile.
 */
export function buildReplayPage(outDir: string = REPLAY_OUT_DIR): Promise<string[]> {
  return bundlePage({ sourceDir: HERE, outDir });
}
