/**
 * A streaming UTF-16 to UTF-8 decoder over `TextDecoder`: bytes cut anywhere across calls (an odd byte, half a
 * surrogate pair) wait for the next call. Big-endian input has each pair of bytes swapped into little-endian
 * first. What is left at the end becomes U+FFFD, as any decoder makes of broken text.
 */
export class Utf16Decoder {
  readonly #bigEndian: boolean;
  readonly #decoder = new TextDecoder('utf-16le');
  /** Big-endian: the odd byte of the last call, waiting for its pair. */
  #odd: number | undefined;

  /**
   * @param bigEndian - true for UTF-16BE (FE FF as its byte order mark), false for UTF-16LE.
   */
  constructor(bigEndian: boolean) {
    this.#bigEndian = bigEndian;
  }

  /**
   * The UTF-8 of the whole characters in `bytes` (after any bytes kept from the last call).
   *
   * @param bytes - the next bytes of the log.
   * @returns the decoded text as UTF-8, empty when no character was completed.
   */
  decode(bytes: Buffer): Buffer {
    let le = bytes;
    if (this.#bigEndian) {
      const odd = this.#odd;
      const all = odd === undefined ? Buffer.from(bytes) : Buffer.concat([Buffer.from([odd]), bytes]);
      this.#odd = all.length % 2 === 1 ? all[all.length - 1] : undefined;
      le = all.subarray(0, all.length - (all.length % 2)).swap16();
    }
    return Buffer.from(this.#decoder.decode(le, { stream: true }), 'utf8');
  }

  /**
   * What is left at the end of the log: a replacement character for an odd byte or half a surrogate pair.
   *
   * @returns the UTF-8 of what was left, empty when the log ended on a whole character.
   */
  end(): Buffer {
    const odd = this.#odd;
    this.#odd = undefined;
    return Buffer.from(this.#decoder.decode(odd === undefined ? undefined : Buffer.from([odd])), 'utf8');
  }
}
