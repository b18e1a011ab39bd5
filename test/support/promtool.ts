/**
 * Runs Prometheus's `promtool` (found by test/support/tools.ts) and returns its exit code and output, so a suite
 * asserts on what promtool said instead of on a thrown error. A missing promtool fails with the install command.
 *
 * @example
 * ```ts
 * expect(await promtool(['check', 'rules', file])).toMatchObject({ code: 0 });
 * expect(await promtool(['check', 'metrics'], text)).toEqual({ code: 0, output: '' });
 * ```
 */
import { execFile } from 'node:child_process';
import { toolPath } from './tools.js';

/** The result of one promtool run: exit code and stdout followed by stderr. */
export interface PromtoolResult {
  readonly code: number;
  readonly output: string;
}

/** Runs `promtool args...`, writing `input` (when given) to its standard input. */
export function promtool(args: readonly string[], input?: string): Promise<PromtoolResult> {
  const bin = toolPath('promtool');
  return new Promise((resolve, reject) => {
    const child = execFile(bin, args, { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') reject(error);
      else resolve({ code: error ? Number(error.code) : 0, output: `${stdout}${stderr}`.trim() });
    });
    child.stdin?.end(input ?? '');
  });
}
