// Installs a Node.js line from npm's `node` package (a registry package that ships the binary) into a cache folder
// outside the repository: $SLUICE_NODE_CACHE/<line>, by default ~/.cache/sluice-node/<line>. Shared by
// scripts/main-line.mjs (`npm start` and `npm test` on a system Node.js older than 22.12) and
// scripts/node-lines.mjs (every suite on the other supported lines).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The main line: what `npm test` and CI run first, and what scripts/main-line.mjs installs on an older system. */
export const MAIN_LINE = '24';

/**
 * Whether a Node.js version is one Sluice supports (22.12 or newer: `engines` in package.json). 22.12 is where
 * `require()` of an ES module and `reusePort` (serve --threads) arrived on the 22 line.
 *
 * @param version - a version such as `22.12.0` or `v24.1.0`.
 */
export function supportedNode(version) {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 12);
}

/** The cache folder of every installed line. */
export const NODE_CACHE = process.env.SLUICE_NODE_CACHE || join(homedir(), '.cache', 'sluice-node');

/**
 * The bin folder of Node.js `line` (a major version, for example '24') in the cache, installed when missing or of
 * another major. Prints one line before installing; throws when npm fails or installs another major.
 */
export function nodeLine(line, { stdio = 'inherit', quiet = false } = {}) {
  const dir = join(NODE_CACHE, line);
  const bin = join(dir, 'node_modules', '.bin');
  const node = join(bin, 'node');
  if (existsSync(node) && nodeVersion(node).startsWith(`v${line}.`)) return bin;
  mkdirSync(dir, { recursive: true });
  // The node package installs its platform binary from a preinstall script: allowed here by name.
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ private: true, allowScripts: { node: true } })}\n`,
  );
  if (!quiet) console.log(`Installing Node.js ${line} into ${dir} ...`);
  // Quiet: npm's output is kept and shown only when it fails, so the caller's one line is all a user reads.
  execFileSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--no-save', '--loglevel=error', `node@${line}`],
    {
      cwd: dir,
      stdio: quiet ? 'pipe' : stdio,
    },
  );
  if (!nodeVersion(node).startsWith(`v${line}.`)) throw new Error(`${node} is not Node.js ${line}`);
  return bin;
}

/** `node --version` of a binary, or '' when it does not run. */
export function nodeVersion(node) {
  try {
    return execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}
