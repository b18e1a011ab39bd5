/**
 * Where a suite finds the system programs it starts for real (redis-server, chromium, nginx, promtool, ...): one
 * lookup for every suite, reading the table of scripts/system-tools.mjs that the installer and `npm test`'s
 * pre-step read too. A missing program is an error naming the install command, never a silent skip; a suite that
 * may be left out says so through the program's SLUICE_SKIP_* variable, which vitest.config.ts applies.
 *
 * @example
 * ```ts
 * const chromium = toolPath('chromium');
 * ```
 */
import {
  findTool,
  missingToolsMessage,
  type SystemToolName,
  systemTool,
} from '../../scripts/system-tools.mjs';

export type { SystemToolName } from '../../scripts/system-tools.mjs';

/** Set by vitest.config.ts in the unit project, whose suites start no program. */
/**
 * The flags every suite starts headless Chromium with: no sandbox (tests run as root), no GPU, and none of the
 * browser's own connections (background networking, QUIC, component updates, sync), which this machine's closed
 * network refuses, many at a time.
 */
export const CHROMIUM_ARGS: readonly string[] = Object.freeze([
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]);

export const UNIT_PROJECT_VAR = 'SLUICE_TEST_PROJECT';

/**
 * The absolute path of a system program (its *_BIN variable, then PATH, then the sbin folders).
 *
 * @throws Error naming the install command and the opt-out variable when the program is missing, and when called
 * from the unit project (a suite that starts a program is not a unit test: vitest.config.ts finds such suites by
 * their calls of this function and of the starters in test/support).
 */
export function toolPath(name: SystemToolName): string {
  if (process.env[UNIT_PROJECT_VAR] === 'unit') {
    throw new Error(
      `a unit test started ${name}: call toolPath('${name}') (or a starter from test/support) in the test file ` +
        'itself so that vitest.config.ts moves it to the system project, or name it *.e2e.test.ts',
    );
  }
  const path = findTool(name);
  if (path === undefined) throw new Error(missingToolsMessage([systemTool(name)]));
  return path;
}
