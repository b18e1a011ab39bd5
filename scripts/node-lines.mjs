// Runs the vitest suites on other Node.js lines than the one running this script: `npm test` covers the main
// line (lint, types, layer rules, coverage gate); this runs every suite again on each line given, for example
//
//   node scripts/node-lines.mjs 22 24          (npm run test:lines)
//
// Each line's Node comes from npm's `node` package (a registry package that ships the binary), installed once
// into a cache folder outside the repository: $SLUICE_NODE_CACHE/<line>, by default ~/.cache/sluice-node/<line>.
// The workspace needs no rebuild per line: its native parts (rolldown, lightningcss) are N-API binaries and
// esbuild is a separate executable. Prints each line's time and exits non-zero when a line fails.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const cache = process.env.SLUICE_NODE_CACHE || join(homedir(), '.cache', 'sluice-node');
const lines = process.argv.slice(2);
if (lines.length === 0 || lines.some((l) => !/^\d+$/.test(l))) {
  console.error('usage: node scripts/node-lines.mjs <major> [<major> ...]   for example: 22 24');
  process.exit(2);
}

/** The bin folder of Node `line` in the cache, installed when missing or of another major. */
function nodeLine(line) {
  const dir = join(cache, line);
  const bin = join(dir, 'node_modules', '.bin');
  const node = join(bin, 'node');
  if (existsSync(node) && version(node).startsWith(`v${line}.`)) return bin;
  mkdirSync(dir, { recursive: true });
  // The node package installs its platform binary from a preinstall script: allowed here by name.
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ private: true, allowScripts: { node: true } })}\n`,
  );
  console.log(`Installing Node.js ${line} into ${dir} ...`);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', `node@${line}`], {
    cwd: dir,
    stdio: 'inherit',
  });
  if (!version(node).startsWith(`v${line}.`)) throw new Error(`${node} is not Node.js ${line}`);
  return bin;
}

function version(node) {
  try {
    return execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

const results = [];
for (const line of lines) {
  const bin = nodeLine(line);
  const node = join(bin, 'node');
  const v = version(node);
  console.log(`\n=== Node.js ${v}: vitest run ===`);
  const started = process.hrtime.bigint();
  // The line's bin folder first on PATH: the children the suites start (node, npm's node) run on it too.
  const env = { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` };
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
