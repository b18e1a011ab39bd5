// Runs the vitest suites on other Node.js lines than the one running this script: `npm test` covers the main
// line (lint, types, layer rules, coverage gate); this runs every suite again on each line given, for example
//
//   node scripts/node-lines.mjs 22 24          (npm run test:lines)
//
// Each line's Node comes from npm's `node` package, installed once into a cache folder outside the repository
// (scripts/node-line.mjs).
// The workspace needs no rebuild per line: its native parts (rolldown, lightningcss) are N-API binaries and
// esbuild is a separate executable. Prints each line's time and exits non-zero when a line fails.
import { spawnSync } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeLine, nodeVersion as version } from './node-line.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const lines = process.argv.slice(2);
if (lines.length === 0 || lines.some((l) => !/^\d+$/.test(l))) {
  console.error('usage: node scripts/node-lines.mjs <major> [<major> ...]   for example: 22 24');
  process.exit(2);
}

const results = [];
for (const line of lines) {
  const bin = nodeLine(line);
  const node = join(bin, 'node');
  const v = version(node);
  console.log(`\n=== Node.js ${v}: vitest run ===`);
  const started = process.hrtime.bigint();
  // The line's bin folder first on PATH: the children the suites start (node, npm's node) run on it too. The
  // container image suite runs once, on the main line: the image's Node.js is its base image's, not this line's,
  // so it is opted out here (and listed as such at the end of each line's run).
  const env = {
    ...process.env,
    PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
    SLUICE_SKIP_CONTAINERS: '1',
  };
  const run = spawnSync(node, [join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run'], {
    cwd: root,
    env,
    stdio: 'inherit',
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  results.push({ v, ok: run.status === 0, seconds });
}

console.log('\nNode.js lines:');
for (const r of results) console.log(`  ${r.v}: ${r.ok ? 'passed' : 'FAILED'} in ${r.seconds.toFixed(0)} s`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
