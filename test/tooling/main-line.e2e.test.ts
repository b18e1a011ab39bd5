/**
 * `npm start`, `npm test`, `npm run bench` and `npm run docs:images` run on a supported Node.js whatever the
 * machine ships: scripts/main-line.mjs keeps a system Node.js of 22.12 or newer, and on an older one runs the
 * script on Node.js 24 from npm's `node` package, saying so in one line. Tried with a real old Node.js: the one
 * running this file when it is older than 22.12, else Node.js 20 from the same cache.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MAIN_LINE, nodeLine, supportedNode } from '../../scripts/node-line.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function which(node: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      node,
      ['scripts/main-line.mjs', '--which'],
      { cwd: ROOT, timeout: 5 * 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

describe('the main Node.js line', () => {
  it('supports 22.12 and newer, and nothing older', () => {
    expect(['20.19.0', '22.11.0', 'v18.20.4'].map(supportedNode)).toEqual([false, false, false]);
    expect(['22.12.0', 'v24.0.0', '26.1.2', '23.0.0'].map(supportedNode)).toEqual([true, true, true, true]);
    expect(MAIN_LINE).toBe('24');
  });

  it('says so in one line and runs on Node.js 24 when the system Node.js is older', {
    timeout: 6 * 60_000,
  }, async () => {
    // Node.js 20: past its end of life, the line a machine of this kind ships.
    const old = supportedNode(process.versions.node)
      ? join(nodeLine('20', { quiet: true }), 'node')
      : process.execPath;
    const r = await which(old);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^Node\.js v\d+\.\d+\.\d+ is older than 22\.12: running on Node\.js v24\.\d+\.\d+ from npm's node package \(/,
    );
    expect(lines[1]).toMatch(/\/node v24\.\d+\.\d+$/);
  });

  it('keeps a supported system Node.js as it is, silently', async () => {
    const current = supportedNode(process.versions.node)
      ? process.execPath
      : join(nodeLine(MAIN_LINE, { quiet: true }), 'node');
    const r = await which(current);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout.trim()).toBe(`${current} v${r.stdout.trim().split(' v')[1]}`);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
  });

  it('is what npm start, npm test, npm run bench and npm run docs:images go through', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
      engines: { node: string };
    };
    for (const name of ['start', 'test', 'bench', 'docs:images']) {
      expect(pkg.scripts[name]).toBe(`node scripts/main-line.mjs ${name}:main-line`);
      expect(pkg.scripts[`${name}:main-line`]).toBeDefined();
    }
    expect(pkg.engines.node).toBe('>=22.12');
  });
});
