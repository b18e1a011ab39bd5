import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Runs a benchmark worker in a fresh Node process (so one library's heap and timers never weigh on another's
 * figures) and returns the JSON it prints on its last line.
 */
export function runWorker<T>(
  script: URL,
  args: readonly string[],
  nodeFlags: readonly string[] = [],
): Promise<T> {
  const tsx = fileURLToPath(new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags, '--import', tsx, fileURLToPath(script), ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${fileURLToPath(script)} ${args.join(' ')} exited ${code}`));
      const last = out.trim().split('\n').at(-1) ?? '';
      resolve(JSON.parse(last) as T);
    });
  });
}
