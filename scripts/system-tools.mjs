// The programs the test suite starts for real, in one table that scripts/ensure-install.mjs (before `npm test`),
// scripts/system-deps.sh (the installer .ci/run and ensure-install share) and test/support/tools.ts (each suite)
// all read, so a tool added here is installed, checked and found the same way everywhere.
//
//   node scripts/system-tools.mjs --missing-packages   prints the Debian packages of missing tools, one a line
import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * One program: its command name, the Debian package that brings it, the variable that names another binary, and
 * the variable that opts the suites needing it out (documented in CONTRIBUTING.md).
 */
export const SYSTEM_TOOLS = Object.freeze([
  { name: 'redis-server', apt: 'redis-server', binVar: 'REDIS_SERVER_BIN', optOut: 'SLUICE_SKIP_REDIS' },
  { name: 'redis-cli', apt: 'redis-tools', binVar: 'REDIS_CLI_BIN', optOut: 'SLUICE_SKIP_REDIS' },
  { name: 'chromium', apt: 'chromium', binVar: 'CHROMIUM_BIN', optOut: 'SLUICE_SKIP_BROWSER' },
  { name: 'promtool', apt: 'prometheus', binVar: 'PROMTOOL_BIN', optOut: 'SLUICE_SKIP_PROMETHEUS' },
  { name: 'prometheus', apt: 'prometheus', binVar: 'PROMETHEUS_BIN', optOut: 'SLUICE_SKIP_PROMETHEUS' },
  { name: 'nginx', apt: 'nginx', binVar: 'NGINX_BIN', optOut: 'SLUICE_SKIP_NGINX' },
  { name: 'openssl', apt: 'openssl', binVar: 'OPENSSL_BIN', optOut: 'SLUICE_SKIP_OPENSSL' },
  // The container image suite builds and runs the Dockerfile with podman on the runc runtime (podman's default
  // alternative, crun, is not what these machines run); both packages, so a fresh machine gets both.
  { name: 'podman', apt: 'podman', binVar: 'PODMAN_BIN', optOut: 'SLUICE_SKIP_CONTAINERS' },
  { name: 'runc', apt: 'runc', binVar: 'RUNC_BIN', optOut: 'SLUICE_SKIP_CONTAINERS' },
]);

/** The one command that installs every missing tool (Debian or Ubuntu, apt-get). */
export const INSTALL_COMMAND = 'sudo bash scripts/system-deps.sh';

// Debian installs daemons such as nginx in sbin folders, which a non-root PATH usually lacks.
const SBIN = ['/usr/local/sbin', '/usr/sbin', '/sbin'];

function executable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The table row of `name`; throws on a name the table does not know (a typo in a suite). */
export function systemTool(name) {
  const tool = SYSTEM_TOOLS.find((t) => t.name === name);
  if (tool === undefined) {
    throw new Error(
      `unknown system tool ${JSON.stringify(name)}: expected one of ${SYSTEM_TOOLS.map((t) => t.name).join(', ')}`,
    );
  }
  return tool;
}

/**
 * The absolute path of a tool: the file its variable names (when set), else the first executable on PATH, else
 * in an sbin folder; undefined when none exists.
 */
export function findTool(name, env = process.env) {
  const tool = systemTool(name);
  const given = env[tool.binVar];
  if (given !== undefined && given !== '') {
    if (isAbsolute(given) || given.includes('/')) return executable(given) ? given : undefined;
    return findOnPath(given, env);
  }
  return findOnPath(tool.name, env);
}

function findOnPath(command, env) {
  const dirs = [...(env.PATH ?? '').split(delimiter).filter((d) => d !== ''), ...SBIN];
  for (const dir of dirs) {
    const file = join(dir, command);
    if (executable(file)) return file;
  }
  return undefined;
}

/** True when the tool's opt-out variable is set to something other than empty, 0 or false. */
export function isOptedOut(name, env = process.env) {
  const value = env[systemTool(name).optOut];
  return value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false';
}

/** The tools that are neither found nor opted out. */
export function missingTools(env = process.env) {
  return SYSTEM_TOOLS.filter((t) => !isOptedOut(t.name, env) && findTool(t.name, env) === undefined);
}

/**
 * The message that stops a run: what is missing, the one command that installs it (INSTALL_COMMAND unless
 * given), and how to opt out.
 */
export function missingToolsMessage(missing, command = INSTALL_COMMAND) {
  const packages = [...new Set(missing.map((t) => t.apt))];
  const optOuts = [...new Set(missing.map((t) => `${t.optOut}=1`))];
  return [
    `The test suite starts these programs for real and they are missing: ${missing.map((t) => t.name).join(', ')}.`,
    `Install them (Debian packages ${packages.join(', ')}) with:`,
    '',
    `  ${command}`,
    '',
    `Or leave out the suites that need them (listed as opted out at the end of the run): ${optOuts.join(' ')} npm test`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--missing-packages') {
  for (const apt of new Set(missingTools().map((t) => t.apt))) console.log(apt);
}
