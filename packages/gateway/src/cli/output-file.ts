import {
  accessSync,
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/** A file a command reads: a path, or an open descriptor (standard input redirected from a file). */
export type InputFile =
  | { readonly what: string; readonly path: string }
  | { readonly what: string; readonly fd: number; readonly path?: undefined };

/**
 * Checks a file a command will write after a long run (`--html`, `--out`) before the run: a replay of a large
 * log should not end in an error that was known at its start, and the file must not be one the command reads
 * (`recommend --out access.log access.log` would replace the log with the proposal).
 *
 * @param option - the option, for the message.
 * @param file - the file as given.
 * @param inputs - the files the command reads: the output is refused when it is one of them, compared by real
 *   path and by device and inode (a symlink or a hard link to an input is that input).
 * @returns why the file cannot be written (naming the option, the expectation and the value), or `undefined`.
 */
export function outputFileProblem(
  option: string,
  file: string,
  inputs: readonly InputFile[] = [],
): string | undefined {
  const given = JSON.stringify(file);
  const path = resolve(file);
  try {
    const st = statSync(path);
    if (st.isDirectory()) return `${option} must name a file, got ${given}: it is a directory`;
    const input = sameAsInput(path, st, inputs);
    if (input !== undefined)
      return `${option} must name a file that is no input, got ${given}: it is ${input.what}${input.path === undefined ? '' : ` ${JSON.stringify(input.path)}`}; write to another file`;
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

/** The input that is the existing file `path` (whose stats are `st`), if any. */
function sameAsInput(path: string, st: Stats, inputs: readonly InputFile[]): InputFile | undefined {
  const real = realOrSelf(path);
  for (const input of inputs) {
    let other: Stats;
    try {
      other = input.path === undefined ? fstatSync(input.fd) : statSync(input.path);
    } catch {
      continue; // an input that cannot be read is reported as such by the command
    }
    // Device and inode find a hard link; the real path says the same of a symlink where inodes are not stable.
    if (other.dev === st.dev && other.ino === st.ino && other.isFile()) return input;
    if (input.path !== undefined && realOrSelf(resolve(input.path)) === real) return input;
  }
  return undefined;
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * Writes a file whole or not at all: the text goes to a temporary file beside it, flushed to the disk, then renamed
 * over it, so a full disk or a failure part way leaves the old file as it was (and no temporary file). A symlink
 * is followed: the file it names is replaced and the link kept. An existing file keeps its permissions.
 *
 * @param file - the file.
 * @param text - its new content.
 * @param write - writes bytes to a descriptor (`fs.writeSync`; replaced in tests to fail part way).
 * @throws the error of the write or of the rename.
 */
export function writeFileWhole(
  file: string,
  text: string,
  write: (fd: number, bytes: Buffer, offset: number) => number = (fd, b, o) => writeSync(fd, b, o),
): void {
  const target = realOrSelf(resolve(file));
  let mode: number | undefined;
  try {
    mode = statSync(target).mode & 0o7777;
  } catch {
    // a new file: the default mode, less the umask
  }
  const tmp = join(dirname(target), `.${basename(target)}.${process.pid}.${Date.now().toString(36)}.tmp`);
  const fd = openSync(tmp, 'wx', mode ?? 0o666);
  let done = false;
  try {
    // The umask applied at the open: the old file's permissions are set as they were.
    if (mode !== undefined) fchmodSync(fd, mode);
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length; ) at += write(fd, bytes, at);
    fsyncSync(fd);
    closeSync(fd);
    done = true;
    renameSync(tmp, target);
  } catch (e) {
    if (!done) closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
}
