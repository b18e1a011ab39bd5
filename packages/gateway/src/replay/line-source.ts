import { closeSync, createReadStream, fstatSync, openSync, readSync } from 'node:fs';
import { Readable } from 'node:stream';
import { type LogEncoding, utf8Blocks } from './log-encoding.js';

/**
 * Longer lines (in UTF-16 code units, as the parsers see them) are not requests (a binary file, a line break lost):
 * they are counted as unknown and skipped.
 */
export const MAX_LINE_CHARS = 64 * 1024;

/** What reading one log gives besides its lines. */
export interface LineSourceResult {
  /** Lines read (including blank and overlong ones). */
  readonly lines: number;
  /** True when the log was gzip-compressed. */
  readonly gzip: boolean;
  /** The encoding the log was decoded from, when it was not UTF-8 (UTF-16 or UTF-32, as Windows tools write). */
  readonly encoding?: LogEncoding;
  /** Why reading stopped early (a truncated gzip stream, a read error); the lines before it were delivered. */
  readonly error?: string;
}

/**
 * Bytes per read of a log file (and per block of a gzip stream). Small enough that each read and its decoded text
 * live in V8's young generation: with 1 MiB reads every block was a fresh mapping, page faults and all, and
 * reading took three times the CPU (docs/benchmarks.md).
 */
export const READ_BYTES = 64 * 1024;

/** A log's bytes: a stream (standard input, a test's), or any other source of blocks in order. */
export type LogBytes = AsyncIterable<Buffer | string>;

/**
 * Opens a log for reading: a file ({@link fileBlocks}), or standard input for `-`.
 *
 * @param name - the path, or `-`.
 * @param stdin - the stream `-` stands for (the process's standard input by default).
 */
export function openLog(name: string, stdin: Readable = process.stdin): LogBytes {
  return name === '-' ? stdin : fileBlocks(name);
}

/**
 * The bytes of a file in blocks of {@link READ_BYTES}. A regular file is read synchronously, each block in its
 * own turn of the event loop: a read stream hands every block to a thread of libuv's pool and back, and on one
 * core those hand-offs cost the replay more than the reads (docs/benchmarks.md). A pipe or a device (`<(zcat
 * ...)`, a FIFO) may block, so it is read as a stream. Opening fails at the first block, as a stream would.
 *
 * @param path - the file.
 */
export async function* fileBlocks(path: string): AsyncGenerator<Buffer> {
  const fd = openSync(path, 'r');
  if (!fstatSync(fd).isFile()) {
    yield* createReadStream('', { fd, highWaterMark: READ_BYTES }) as AsyncIterable<Buffer>;
    return;
  }
  try {
    for (;;) {
      // A fresh block per read: the text decoded from it and a gzip stream may still hold the last one.
      const block = Buffer.allocUnsafe(READ_BYTES);
      const n = readSync(fd, block, 0, READ_BYTES, null);
      if (n === 0) return;
      yield n === READ_BYTES ? block : block.subarray(0, n);
      // Timers and I/O callbacks get their turn between blocks, as between a stream's reads.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Delivers the lines of a log in order, one call per line, without the line break (`\n` or `\r\n`). A gzip stream
 * is recognised by its magic bytes (1f 8b), whatever the file's name, and decompressed (concatenated members too,
 * as `logrotate` and `cat a.gz b.gz` make). UTF-16 and UTF-32 (a byte order mark, or zero bytes around the first
 * characters) are decoded and a UTF-8 byte order mark dropped ({@link utf8Blocks}). Each read is decoded as UTF-8
 * up to its last line break in one call (a line break is never inside a character, so no character is split); the
 * bytes after it wait for the next read. Memory stays bounded by the read size and the line limit: a line longer
 * than `maxLineChars` is delivered as `undefined` (an unknown line), and its bytes are dropped as they come.
 *
 * @param input - the raw bytes, in blocks.
 * @param onLine - called for each line with its 1-based number; synchronous, so a read's lines are handled
 *   before the next read.
 * @param maxLineChars - the longest line delivered; default {@link MAX_LINE_CHARS}.
 * @param pace - asked before each read's lines are delivered: a promise to wait for (the merge of several logs
 *   has no room for more lines of this one yet), or `undefined` to go on at once.
 * @returns the count of lines and, when the stream failed part way (a truncated gzip file), why; never rejects
 *   for such a failure, since the lines read so far are still worth a report.
 */
export async function forEachLine(
  input: LogBytes,
  onLine: (line: string | undefined, no: number) => void,
  maxLineChars = MAX_LINE_CHARS,
  pace?: () => Promise<void> | undefined,
): Promise<LineSourceResult> {
  // Bytes after the last line break read; once over three bytes per allowed character (the most UTF-8 spends on
  // one UTF-16 code unit) and a carriage return, the line is certainly too long, and the rest of it is dropped
  // until its line break.
  let carry: Buffer | undefined;
  const carryLimit = 3 * maxLineChars + 1;
  let no = 0;
  let overlong = false;
  let gzip = false;
  let encoding: LogEncoding | undefined;
  const line = (text: string, start: number, end: number) => {
    no++;
    if (overlong) {
      overlong = false;
      onLine(undefined, no);
    } else onLine(end - start > maxLineChars ? undefined : text.slice(start, end), no);
  };
  // `text` ends with a line break.
  const take = (text: string) => {
    let start = 0;
    for (;;) {
      const nl = text.indexOf('\n', start);
      if (nl < 0) return;
      line(text, start, nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl);
      start = nl + 1;
    }
  };
  const keep = (bytes: Buffer) => {
    if (bytes.length === 0) return;
    if (overlong) return;
    // A copy: the rest of a large read is not held for a few bytes of it.
    carry = carry === undefined ? Buffer.from(bytes) : Buffer.concat([carry, bytes]);
    if (carry.length > carryLimit) {
      overlong = true;
      carry = undefined;
    }
  };
  let error: string | undefined;
  try {
    const blocks = utf8Blocks(
      decompressed(input, () => {
        gzip = true;
      }),
      (e) => {
        encoding = e;
      },
    );
    for await (const chunk of blocks) {
      if (pace !== undefined) {
        const wait = pace();
        if (wait !== undefined) await wait;
      }
      const last = chunk.lastIndexOf(10);
      if (last < 0) {
        keep(chunk);
        continue;
      }
      let from = 0;
      if (carry !== undefined) {
        // The line begun in earlier reads, decoded on its own so that the rest of the read is not copied.
        from = chunk.indexOf(10) + 1;
        const head = Buffer.concat([carry, chunk.subarray(0, from)]);
        carry = undefined;
        take(head.toString('utf8'));
      }
      if (from <= last) take(chunk.toString('utf8', from, last + 1));
      keep(chunk.subarray(last + 1));
    }
  } catch (e) {
    error = (e as Error).message;
  }
  if (carry !== undefined || overlong) {
    const rest = carry === undefined ? '' : carry.toString('utf8');
    line(rest, 0, rest.endsWith('\r') ? rest.length - 1 : rest.length);
  }
  return {
    lines: no,
    gzip,
    ...(encoding === undefined ? {} : { encoding }),
    ...(error === undefined ? {} : { error }),
  };
}

async function* decompressed(input: LogBytes, onGzip: () => void): AsyncGenerator<Buffer> {
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
    // zlib is loaded by the first gzip log: most logs are plain, and loading it cost every replay 5 ms of start.
    const { createGunzip } = process.getBuiltinModule('node:zlib');
    const gunzip = createGunzip({ chunkSize: READ_BYTES });
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
