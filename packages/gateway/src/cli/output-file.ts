import { accessSync, constants, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Checks a file a command will write after a long run (`--html`, `--out`) before the run: a replay of a large
 * log should not end in an error that was known at its start.
 *
 * @param option - the option, for the message.
 * @param file - the file as given.
 * @returns why the file cannot be written (naming the option, the expectation and the value), or `undefined`.
 */
export function outputFileProblem(option: string, file: string): string | undefined {
  const given = JSON.stringify(file);
  const path = resolve(file);
  try {
    if (statSync(path).isDirectory()) return `${option} must name a file, got ${given}: it is a directory`;
    accessSync(path, constants.W_OK);
    return undefined;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
      return `${option} must name a writable file, got ${given}: ${(e as Error).message}`;
  }
  const dir = dirname(path);
  try {
    if (!statSync(dir).isDirectory())
      return `${option} must name a file in a writable directory, got ${given}: ${dir} is not a directory`;
    accessSync(dir, constants.W_OK);
    return undefined;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? `${dir} does not exist` : (e as Error).message;
    return `${option} must name a file in a writable directory, got ${given}: ${why}`;
  }
}
