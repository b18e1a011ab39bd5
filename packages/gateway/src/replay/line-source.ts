import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';

/** Longer lines are not requests (a binary file, a line break lost): they are counted as unknown and skipped. */
export const MAX_LINE_CHARS = 64 * 1024;

/** What reading one log gives besides its lines. */
export interface LineSourceResult {
  /** Lines read (including blank and overlong ones). */
  readonly lines: number;
  /** True when the log was gzip-compressed. */
  readonly gzip: boolean;
  /** Why reading stopped early (a truncated gzip stream, a read error); the lines before it were delivered. */
  readonly error?: string;
}

/**
 * Opens a log for reading: a file, or standard input for `-`.
 *
 * @param name - the path, or `-`.
 * @param stdin - the stream `-` stands for (the process's standard input by default).
 */
export function openLog(name: string, stdin: Readable = process.stdin): Readable {
  return name === '-' ? stdin : createReadStream(name, { highWaterMark: 1 << 20 });
}

/**
 * Delivers the lines of a log in order, one call per line, without the line break (`\n` or `\r\n`). A gzip stream
 * is recognised by its magic bytes (1f 8b), whatever the file's name, and decompressed (concatenated members
 * too, as `logrotate` and `cat a.gz b.gz` make). Lines are cut from large decoded chunks, so memory stays bounded
 * by the chunk size and {@link MAX_LINE_CHARS}; an overlong line is delivered as `undefined` (an unknown line).
 *
 * @param input - the raw bytes.
 * @param onLine - called for each line with its 1-based number; synchronous, so a chunk's lines are handled
 *   before the next chunk is read.
 * @returns the count of lines and, when the stream failed part way (a truncated gzip file), why; never rejects
 *   for such a failure, since the lines read so far are still worth a report.
 */
export async function forEachLine(
  input: Readable,
  onLine: (line: string | undefined, no: number) => void,
): Promise<LineSourceResult> {
  const decoder = new StringDecoder('utf8');
  let carry = '';
  let no = 0;
  let overlong = false;
  let gzip = false;
  const take = (text: string) => {
    let start = 0;
    for (;;) {
      const nl = text.indexOf('\n', start);
      if (nl < 0) break;
      let end = nl;
      if (end > start && text.charCodeAt(end - 1) === 13) end--;
      no++;
      if (overlong) {
        overlong = false;
        onLine(undefined, no);
      } else onLine(text.slice(start, end), no);
      start = nl + 1;
    }
    carry = start === 0 ? text : text.slice(start);
    if (carry.length > MAX_LINE_CHARS) {
      overlong = true;
      carry = '';
    }
  };
  let error: string | undefined;
  try {
    for await (const chunk of decompressed(input, () => {
      gzip = true;
    })) {
      take(carry.length === 0 ? decoder.write(chunk) : carry + decoder.write(chunk));
    }
  } catch (e) {
    error = (e as Error).message;
  }
  const rest = carry + decoder.end();
  if (rest.length > 0 || overlong) {
    no++;
    onLine(overlong ? undefined : rest.endsWith('\r') ? rest.slice(0, -1) : rest, no);
  }
  return error === undefined ? { lines: no, gzip } : { lines: no, gzip, error };
}

async function* decompressed(input: Readable, onGzip: () => void): AsyncGenerator<Buffer> {
  const it = input[Symbol.asyncIterator]() as AsyncIterator<Buffer | string>;
  const first = await it.next();
  if (first.done) return;
  let head = toBuffer(first.value);
  // One byte is not enough to tell: read on until two are known.
  while (head.length < 2) {
    const next = await it.next();
    if (next.done) break;
    head = Buffer.concat([head, toBuffer(next.value)]);
  }
  async function* all(): AsyncGenerator<Buffer> {
    yield head;
    for (;;) {
      const n = await it.next();
      if (n.done) return;
      yield toBuffer(n.value);
    }
  }
  if (head[0] === 0x1f && head[1] === 0x8b) {
    onGzip();
    const gunzip = createGunzip({ chunkSize: 1 << 20 });
    // A read error of the source ends the decompression with it, rather than leaving it waiting.
    Readable.from(all())
      .on('error', (e) => gunzip.destroy(e))
      .pipe(gunzip);
    yield* gunzip;
  } else yield* all();
}

function toBuffer(v: Buffer | string): Buffer {
  return typeof v === 'string' ? Buffer.from(v) : v;
}
