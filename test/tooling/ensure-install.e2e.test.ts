/**
 * The pre-step of `npm test` (scripts/ensure-install.mjs --tools) on a machine where a program the suites start is
 * missing and nothing may be installed (SLUICE_NO_INSTALL=1, so a root test run never calls apt-get): it stops at
 * once with the one command to run, or lets an opted-out run go.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = 'scripts/ensure-install.mjs';

interface Result {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The command the message names: root runs the script itself, anyone else through sudo. */
const COMMAND = process.getuid?.() === 0 ? 'bash scripts/system-deps.sh' : 'sudo bash scripts/system-deps.sh';

/** Runs the pre-step with installing forbidden and nginx pointed at a file that does not exist. */
function preStep(extraEnv: Record<string, string>): Promise<Result> {
  // The caller's opt-outs and binary paths pass through, so only nginx is missing whatever the machine lacks.
  const passed = Object.entries(process.env).filter(([k]) => /^SLUICE_SKIP_|_BIN$/.test(k));
  const env = {
    ...Object.fromEntries(passed),
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    SLUICE_NO_INSTALL: '1',
    NGINX_BIN: '/nonexistent/nginx',
    ...extraEnv,
  };
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [SCRIPT, '--tools'],
      { cwd: ROOT, env, timeout: 30_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

describe('npm test pre-step', () => {
  it('stops when a program is missing, naming the command that installs it and the opt-out', async () => {
    const r = await preStep({});
    expect(r.stderr).toMatch(/they are missing: (.+, )?nginx\./);
    expect(r.stderr).toContain(`\n  ${COMMAND}\n`);
    expect(r.stderr).toMatch(/SLUICE_SKIP_NGINX=1 (\S+ )*npm test/);
    expect(r.code).toBe(1);
  });

  it('lets the run go when the missing program is opted out', async () => {
    const r = await preStep({ SLUICE_SKIP_NGINX: '1' });
    expect(r).toEqual({ code: 0, stdout: '', stderr: '' });
  });
});
