import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCode, SluiceError } from 'sluice';
import type { ReplayReport } from './replay-report.js';

/**
 * Where `npm run build` writes the report page (`replay-ui/build.ts`): `<package>/dist/replay-assets`, two
 * folders above this file both in `src/replay` (tests, tsx) and in `dist/replay` (the installed gateway).
 */
export const REPLAY_ASSETS_DIR = fileURLToPath(new URL('../../dist/replay-assets/', import.meta.url));

/** JSON inside a script element: `<` escaped so no `</script>` or `<!--` in the data can end the element. */
function scriptJson(v: unknown): string {
  return JSON.stringify(v)
    .replaceAll('<', '\\u003c')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}

/**
 * The self-contained HTML page of a replay report: the built page's script and styles inlined, the report as a
 * JSON script element, no request to any origin (it opens from a file, a mail attachment, a CI artifact).
 *
 * @param report - the report.
 * @param assetsDir - the built page; default {@link REPLAY_ASSETS_DIR}.
 * @returns the page.
 * @throws SluiceError `ERR_INVALID_OPTION` naming `--html` when the page was not built (`npm run build`).
 */
export function replayHtml(report: ReplayReport, assetsDir = REPLAY_ASSETS_DIR): string {
  let html: string;
  let js: string;
  let css: string;
  try {
    html = readFileSync(join(assetsDir, 'index.html'), 'utf8');
    js = readFileSync(join(assetsDir, 'app.js'), 'utf8');
    css = readFileSync(join(assetsDir, 'app.css'), 'utf8');
  } catch {
    throw new SluiceError(
      ErrorCode.InvalidOption,
      `--html needs the built report page in ${assetsDir}, which is missing: run "npm run build"`,
      { option: '--html' },
    );
  }
  // Function replacements: a `$` in the script or the data must not be read as a replacement pattern.
  return html
    .replace(
      '<link rel="stylesheet" href="app.css">',
      () => `<style>${css.replaceAll('</style', '<\\/style')}</style>`,
    )
    .replace(
      '<script type="module" src="app.js"></script>',
      () => `<script type="module">${js.replaceAll('</script', '<\\/script')}</script>`,
    )
    .replace(
      '<script type="application/json" id="replay-data">null</script>',
      () => `<script type="application/json" id="replay-data">${scriptJson(report)}</script>`,
    );
}
