// Installs a Node.js line from npm's `node` package (a registry package that ships the binary) into a cache folder
// outside the repository: $SLUICE_NODE_CACHE/<line>, by default ~/.cache/sluice-node/<line>. Shared by
// scripts/node-lines.mjs (every suite on other lines) and the suites that need a newer Node than the one running
// them (the gateway's --threads test needs reusePort, Node >= 22.12).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The cache folder of every installed line. */
export const NODE_CACHE = process.env.SLUICE_NODE_CACHE || join(homedir(), '.cache', 'sluice-node');

/**
 * The bin folder of Node.js `line` (a major version, for example '24') in the cache, installed when missing or of
 * another major. Prints one line before installing; throws when npm fails or installs another major.
 */
export function nodeLine(line, { stdio = 'inherit' } = {}) {
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
  console.log(`Installing Node.js ${line} into ${dir} ...`);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', `node@${line}`], {
    cwd: dir,
    stdio,
  });
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
