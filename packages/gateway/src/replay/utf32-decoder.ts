/**
 * A streaming UTF-32 to UTF-8 decoder, for the logs that `TextDecoder` cannot read (it knows no UTF-32).
 * Bytes cut anywhere across calls are kept until their unit is whole. A unit that is no Unicode scalar value
 * (past U+10FFFF, or a surrogate) and a last unit cut short become U+FFFD, as any decoder makes of broken text.
 */
export class Utf32Decoder {
  readonly #bigEndian: boolean;
  /** The bytes of a unit that a block cut: at most three. */
  #carry: Buffer = Buffer.alloc(0);

  /**
   * @param bigEndian - true for UTF-32BE (00 00 FE FF as its byte order mark), false for UTF-32LE.
   */
  constructor(bigEndian: boolean) {
    this.#bigEndian = bigEndian;
  }

  /**
   * The UTF-8 of the whole units in `bytes` (after any bytes kept from the last call).
   *
   * @param bytes - the next bytes of the log.
   * @returns the decoded text as UTF-8, empty when no unit was completed.
   */
  decode(bytes: Buffer): Buffer {
    const all = this.#carry.length === 0 ? bytes : Buffer.concat([this.#carry, bytes]);
    const whole = all.length - (all.length % 4);
    this.#carry = Buffer.from(all.subarray(whole));
    // Each unit is four bytes and no code point takes more than four in UTF-8: the output never outgrows the input.
    const out = Buffer.allocUnsafe(whole);
    let n = 0;
    for (let i = 0; i < whole; i += 4) {
      const cp = this.#bigEndian ? all.readUInt32BE(i) : all.readUInt32LE(i);
      n = writeUtf8(out, n, cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? 0xfffd : cp);
    }
    return out.subarray(0, n);
  }

  /**
   * What is left at the end of the log: a replacement character for a unit cut short, else nothing.
   *
   * @returns the UTF-8 of what was left, empty when the log ended on a whole unit.
   */
  end(): Buffer {
    const left = this.#carry.length > 0;
    this.#carry = Buffer.alloc(0);
    return left ? Buffer.from('\ufffd', 'utf8') : Buffer.alloc(0);
  }
}

/** Writes code point `cp` as UTF-8 at `at` and returns the offset after it. */
function writeUtf8(out: Buffer, at: number, cp: number): number {
  let n = at;
  if (cp < 0x80) {
    out[n++] = cp;
  } else if (cp < 0x800) {
    out[n++] = 0xc0 | (cp >> 6);
    out[n++] = 0x80 | (cp & 0x3f);
  } else if (cp < 0x10000) {
    out[n++] = 0xe0 | (cp >> 12);
    out[n++] = 0x80 | ((cp >> 6) & 0x3f);
    out[n++] = 0x80 | (cp & 0x3f);
  } else {
    out[n++] = 0xf0 | (cp >> 18);
    out[n++] = 0x80 | ((cp >> 12) & 0x3f);
    out[n++] = 0x80 | ((cp >> 6) & 0x3f);
    out[n++] = 0x80 | (cp & 0x3f);
  }
  return n;
}
