/**
 * Sorts the test files for vitest.config.ts: unit suites (no system program, no child process, no built package:
 * `npm run test:unit`) and system suites (end-to-end, browser, packaging, and every suite that starts a program),
 * and among these the ones left out by a SLUICE_SKIP_* variable. A suite's programs are read from its own text:
 * its calls of `toolPath('name')` and of the starters in test/support, so a new suite is sorted without a list to
 * keep up to date.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { isOptedOut, type SystemToolName, systemTool } from '../../scripts/system-tools.mjs';

/** The test file globs of the workspace (what `include` says when no project narrows it). */
export const TEST_GLOBS = [
  'packages/*/src/**/*.test.ts',
  'packages/*/test/**/*.test.ts',
  'test/**/*.test.ts',
];

/** Test files that are system suites by their name, whatever they start. */
const SYSTEM_NAMES = /\.(e2e|browser)\.test\.ts$/;

/** The starters in test/support and gateway/test/support.ts, with the programs each one runs. */
const STARTERS: Readonly<Record<string, readonly SystemToolName[]>> = {
  startRedisServer: ['redis-server', 'redis-cli'],
  startRedisCluster: ['redis-server', 'redis-cli'],
  startRedisSentinel: ['redis-server', 'redis-cli'],
  redisCli: ['redis-cli'],
  startPrometheus: ['prometheus'],
  startNginx: ['nginx'],
  makeCertificates: ['openssl'],
  promtool: ['promtool'],
};

const STARTER_CALL = new RegExp(`\\b(${Object.keys(STARTERS).join('|')})\\s*\\(`, 'g');
const TOOL_CALL = /\btoolPath\(\s*'([a-z-]+)'\s*\)/g;

/** The programs a test file starts, read from its text. */
export function toolsOf(source: string): Set<SystemToolName> {
  const tools = new Set<SystemToolName>();
  for (const m of source.matchAll(STARTER_CALL)) for (const t of STARTERS[m[1]]) tools.add(t);
  for (const m of source.matchAll(TOOL_CALL)) tools.add(systemTool(m[1]).name);
  return tools;
}

/** A system suite left out by an opt-out variable. */
export interface OptedOutSuite {
  /** Path from the repository root. */
  readonly file: string;
  /** The opt-out variables that left it out, for example `SLUICE_SKIP_NGINX`. */
  readonly variables: readonly string[];
}

/** The sorted test files, paths from the repository root. */
export interface SuiteKinds {
  /** Every test file that is not a unit suite (opted-out ones included). */
  readonly system: readonly string[];
  /** System suites that run (not opted out). */
  readonly systemToRun: readonly string[];
  /** System suites left out, with the variables that did it. */
  readonly optedOut: readonly OptedOutSuite[];
}

/** Sorts every test file under `root` (see the module comment), reading opt-outs from `env`. */
export function sortSuites(root: string, env: NodeJS.ProcessEnv = process.env): SuiteKinds {
  const system: string[] = [];
  const systemToRun: string[] = [];
  const optedOut: OptedOutSuite[] = [];
  for (const file of testFiles(root)) {
    const tools = toolsOf(readFileSync(join(root, file), 'utf8'));
    if (tools.size === 0 && !SYSTEM_NAMES.test(file)) continue;
    system.push(file);
    const variables = [
      ...new Set([...tools].filter((t) => isOptedOut(t, env)).map((t) => systemTool(t).optOut)),
    ];
    if (variables.length > 0) optedOut.push({ file, variables });
    else systemToRun.push(file);
  }
  return { system, systemToRun, optedOut };
}

/** The `*.test.ts` files under the folders TEST_GLOBS names, sorted. */
export function testFiles(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.name === 'node_modules' || e.name === 'dist') continue;
      const full = join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.name.endsWith('.test.ts')) found.push(relative(root, full));
    }
  };
  for (const pkg of readdirSync(join(root, 'packages'))) {
    walk(join(root, 'packages', pkg, 'src'));
    walk(join(root, 'packages', pkg, 'test'));
  }
  walk(join(root, 'test'));
  return found.sort();
}
