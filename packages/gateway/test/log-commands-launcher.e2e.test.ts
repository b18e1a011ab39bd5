/**
 * The committed launcher (`bin/sluice.js`) hands `sluice replay` and `sluice recommend` to the log commands'
 * bundle when it holds the code last compiled, and everything else (or a stale or missing bundle) to the compiled
 * modules. Run in a copy of the launcher beside stand-in builds that say which of them ran.
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';

const LAUNCHER = fileURLToPath(new URL('../bin/sluice.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'sluice-launcher-'));
const pkg = join(root, 'gateway');
const bundle = join(pkg, 'dist/bin/log-commands.bundle.mjs');
const gatewayRecord = join(pkg, 'tsconfig.tsbuildinfo');
const sluiceRecord = join(root, 'sluice/tsconfig.tsbuildinfo');

const T0 = new Date('2026-12-01T00:00:00Z');
const T1 = new Date('2026-12-02T00:00:00Z');

/** Which build ran for these arguments: `bundle` or `modules`. */
const ran = (...args: string[]) => runWith({}, ...args);

/** {@link ran} with these environment variables set, and none that sets the compile cache up beforehand. */
function runWith(env: Record<string, string>, ...args: string[]): string {
  const { NODE_COMPILE_CACHE: _dir, NODE_DISABLE_COMPILE_CACHE: _off, ...inherited } = process.env;
  return execFileSync(process.execPath, [join(pkg, 'bin/sluice.js'), ...args], {
    encoding: 'utf8',
    env: { ...inherited, ...env },
  }).trim();
}

const write = (file: string, text: string, time: Date) => {
  writeFileSync(file, text);
  utimesSync(file, time, time);
};

beforeEach(() => {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(join(pkg, 'bin'), { recursive: true });
  mkdirSync(join(pkg, 'dist/bin'), { recursive: true });
  mkdirSync(join(root, 'sluice'), { recursive: true });
  copyFileSync(LAUNCHER, join(pkg, 'bin/sluice.js'));
  writeFileSync(join(pkg, 'package.json'), '{"type":"module"}');
  writeFileSync(join(pkg, 'dist/bin/sluice.js'), "console.log('modules');\n");
  // Built after both compilers' records: current.
  write(gatewayRecord, '{}', T0);
  write(sluiceRecord, '{}', T0);
  write(bundle, "console.log('bundle', process.argv.slice(2).join(' '));\n", T1);
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the sluice launcher', () => {
  it('runs replay and recommend from a current bundle with their arguments, every other command from the modules', () => {
    expect(ran('replay', '--json', 'a.log')).toBe('bundle replay --json a.log');
    expect(ran('recommend', 'a.log')).toBe('bundle recommend a.log');
    expect(ran('serve')).toBe('modules');
    expect(ran('--help')).toBe('modules');
    expect(ran('validate', 'replay')).toBe('modules');
  });

  it('runs the modules when either compiler built after the bundle (tsc -b without the rest of the build)', () => {
    write(gatewayRecord, '{}', new Date('2026-12-03T00:00:00Z'));
    expect(ran('replay', 'a.log')).toBe('modules');
    write(gatewayRecord, '{}', T0);
    write(sluiceRecord, '{}', new Date('2026-12-03T00:00:00Z'));
    expect(ran('recommend', 'a.log')).toBe('modules');
  });

  it('runs the bundle of an installed package, which has no build records, and the modules without a bundle', () => {
    rmSync(gatewayRecord);
    rmSync(sluiceRecord);
    expect(ran('replay', 'a.log')).toBe('bundle replay a.log');
    rmSync(bundle);
    expect(ran('replay', 'a.log')).toBe('modules');
  });
});

describe('the compile cache of the log commands', () => {
  // The cache lives in the system's temporary directory: TMPDIR points it at one of the test's own.
  it('keeps the bundle compiled in the compile cache, so that later runs need not compile it again', () => {
    const temp = join(root, 'temp');
    mkdirSync(temp);
    expect(runWith({ TMPDIR: temp }, 'replay', 'a.log')).toBe('bundle replay a.log');
    const cache = join(temp, 'node-compile-cache');
    expect(existsSync(cache) && readdirSync(cache, { recursive: true }).length > 0).toBe(true);
    expect(runWith({ TMPDIR: temp }, 'replay', 'a.log')).toBe('bundle replay a.log');
  });

  it('runs the bundle all the same where the cache cannot be written', () => {
    // A directory below a file can never be created.
    const file = join(root, 'a-file');
    writeFileSync(file, '');
    expect(runWith({ TMPDIR: file }, 'recommend', 'a.log')).toBe('bundle recommend a.log');
  });
});
