/**
 * Bundles `sluice replay` and `sluice recommend` into one file, `dist/bin/log-commands.bundle.mjs`, which the
 * committed `bin/sluice.js` loads for these two commands (D-G63). Resolving and loading the two hundred modules
 * they need one by one through Node.js's ES module loader made a replay of a short log take about 0.32 s of CPU;
 * from one file it takes about 0.20 s (Node.js alone starts in 0.07 s). Runs after `tsc -b` (it bundles the
 * compiled `dist/`), as part of `npm run build`.
 *
 *   tsx packages/gateway/scripts/build-log-commands.ts [OUT_FILE]
 */
import { renameSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The bundle the `sluice` command looks for, relative to the package. */
const LOG_COMMANDS_BUNDLE = 'dist/bin/log-commands.bundle.mjs';

const entry = fileURLToPath(new URL('../dist/bin/log-commands.js', import.meta.url));
const out = process.argv[2] ?? fileURLToPath(new URL(`../${LOG_COMMANDS_BUNDLE}`, import.meta.url));
// Written beside and renamed into place: a replay starting meanwhile never loads half a file.
const tmp = `${out}.${process.pid}.tmp.mjs`;
await build({
  entryPoints: [entry],
  outfile: tmp,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  // Loaded only when the build's precompiled configuration validator does not match (a tree edited since its
  // build): kept out, so the bundle stays the size of what a replay runs.
  external: ['ajv'],
  // The CommonJS packages inside (ipaddr.js) and the modules' own `createRequire` calls need a `require`.
  banner: {
    js: "import { createRequire as sluiceCreateRequire } from 'node:module'; const require = sluiceCreateRequire(import.meta.url);",
  },
  legalComments: 'none',
  logLevel: 'warning',
});
renameSync(tmp, out);
console.log(`log commands bundle: ${out}`);
