import { Utf16Decoder } from './utf16-decoder.js';
import { Utf32Decoder } from './utf32-decoder.js';

/**
 * An encoding of a log other than UTF-8 that is read: Windows tools write UTF-16 (PowerShell's `>` and
 * `Out-File` write UTF-16LE with a byte order mark by default) and, when asked, UTF-32 (`-Encoding utf32`).
 */
export type LogEncoding = 'UTF-16LE' | 'UTF-16BE' | 'UTF-32LE' | 'UTF-32BE';

/** Bytes enough to tell the encoding: a byte order mark is at most four, two UTF-16 characters are four. */
const HEAD_BYTES = 4;

/**
 * A log's bytes as UTF-8. UTF-32 and UTF-16 are recognised by their byte order marks (FF FE 00 00 and 00 00 FE FF
 * for UTF-32, FF FE and FE FF for UTF-16) or, without one, by the zero bytes around the first ASCII characters
 * (no UTF-8 text has a zero byte in its first line), and decoded; the mark is dropped. A UTF-8 byte order mark
 * is dropped too, so the first line is read as the others. Other bytes pass through as they are.
 *
 * @param blocks - the bytes (after decompression), in order.
 * @param onEncoding - called once, before the first block, when the log is UTF-16 or UTF-32.
 */
export async function* utf8Blocks(
  blocks: AsyncIterable<Buffer>,
  onEncoding: (encoding: LogEncoding) => void,
): AsyncGenerator<Buffer> {
  const it = blocks[Symbol.asyncIterator]();
  let head: Buffer = Buffer.alloc(0);
  let done = false;
  while (head.length < HEAD_BYTES) {
    const next = await it.next();
    if (next.done) {
      done = true;
      break;
    }
    head = head.length === 0 ? next.value : Buffer.concat([head, next.value]);
  }
  const rest = async function* (): AsyncGenerator<Buffer> {
    if (done) return;
    for (;;) {
      const next = await it.next();
      if (next.done) return;
      yield next.value;
    }
  };
  const [encoding, skip] = sniff(head);
  if (encoding === undefined) {
    if (head.length > skip) yield head.subarray(skip);
    yield* rest();
    return;
  }
  onEncoding(encoding);
  const bigEndian = encoding === 'UTF-16BE' || encoding === 'UTF-32BE';
  const decoder =
    encoding === 'UTF-32LE' || encoding === 'UTF-32BE'
      ? new Utf32Decoder(bigEndian)
      : new Utf16Decoder(bigEndian);
  const first = decoder.decode(head.subarray(skip));
  if (first.length > 0) yield first;
  for await (const block of rest()) {
    const out = decoder.decode(block);
    if (out.length > 0) yield out;
  }
  const end = decoder.end();
  if (end.length > 0) yield end;
}

/** The encoding the first bytes show, and how many of them are a byte order mark. */
function sniff(h: Buffer): [LogEncoding | undefined, number] {
  if (h.length >= 3 && h[0] === 0xef && h[1] === 0xbb && h[2] === 0xbf) return [undefined, 3];
  // UTF-32LE's mark begins with UTF-16LE's: the four bytes are tried first.
  if (h.length >= 4 && h[0] === 0xff && h[1] === 0xfe && h[2] === 0 && h[3] === 0) return ['UTF-32LE', 4];
  if (h.length >= 4 && h[0] === 0 && h[1] === 0 && h[2] === 0xfe && h[3] === 0xff) return ['UTF-32BE', 4];
  if (h.length >= 4 && h[0] !== 0 && h[0] < 0x80 && h[1] === 0 && h[2] === 0 && h[3] === 0)
    return ['UTF-32LE', 0];
  if (h.length >= 4 && h[0] === 0 && h[1] === 0 && h[2] === 0 && h[3] !== 0 && h[3] < 0x80)
    return ['UTF-32BE', 0];
  if (h.length >= 2 && h[0] === 0xff && h[1] === 0xfe) return ['UTF-16LE', 2];
  if (h.length >= 2 && h[0] === 0xfe && h[1] === 0xff) return ['UTF-16BE', 2];
  if (h.length >= 4 && h[0] !== 0 && h[0] < 0x80 && h[1] === 0 && h[2] !== 0 && h[2] < 0x80 && h[3] === 0)
    return ['UTF-16LE', 0];
  if (h.length >= 4 && h[0] === 0 && h[1] !== 0 && h[1] < 0x80 && h[2] === 0 && h[3] !== 0 && h[3] < 0x80)
    return ['UTF-16BE', 0];
  return [undefined, 0];
}
