/**
 * A 32-bit hash of a string's UTF-16 code units (MurmurHash3's mixing), with a seed. No allocation, one pass over
 * the string. Two seeds give a 64-bit fingerprint of a key; a {@link HyperLogLog} takes its register and its rank
 * from the first hash alone (the two are not independent enough to split between them: the estimate of 5,000,000
 * addresses was 4% high that way, 0.4% from one hash).
 *
 * @param s - the string.
 * @param seed - any 32-bit number.
 */
export function hashString(s: string, seed: number): number {
  let h = seed | 0;
  for (let i = 0; i < s.length; i++) {
    let k = Math.imul(s.charCodeAt(i), 0xcc9e2d51);
    k = Math.imul((k << 15) | (k >>> 17), 0x1b873593);
    h ^= k;
    h = (Math.imul((h << 13) | (h >>> 19), 5) + 0xe6546b64) | 0;
  }
  h ^= s.length;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The seed of a client key's first hash: a sketch's register and rank, and half of its fingerprint. */
export const SEED_A = 0x5eed0001;
/** The seed of a client key's second hash: the other half of its fingerprint in the first-request table. */
export const SEED_B = 0x5eed0002;

/**
 * A HyperLogLog distinct-count sketch (Flajolet et al., 2007) of 2^p one-byte registers: it counts any number of
 * distinct keys in 2^p bytes with a relative standard error of 1.04 / sqrt(2^p) (p = 12: 4 KB, 1.6%), and uses
 * linear counting while few registers are set, so small counts are close to exact. Written here rather than taken
 * from npm: the packages that have one hash each key through a general hash library that allocates per call, and
 * `sluice recommend` feeds it from its per-request path (docs/DECISIONS.md, D-G85).
 */
export class HyperLogLog {
  readonly #p: number;
  readonly #registers: Uint8Array;

  /** @param p - the register index bits, 4 to 16. */
  constructor(p = 12) {
    if (!Number.isInteger(p) || p < 4 || p > 16)
      throw new RangeError(`p must be an integer from 4 to 16, got ${p}`);
    this.#p = p;
    this.#registers = new Uint8Array(1 << p);
  }

  /**
   * Counts a key by its hash ({@link hashString} with {@link SEED_A}): the first p bits pick the register, the
   * position of the first 1 bit after them is the rank. Adding a key again changes nothing.
   */
  add(a: number): void {
    const p = this.#p;
    const i = a >>> (32 - p);
    const rank = Math.clz32((a << p) | (1 << (p - 1))) + 1;
    if (rank > this.#registers[i]) this.#registers[i] = rank;
  }

  /** Counts a key given as a string. */
  addString(s: string): void {
    this.add(hashString(s, SEED_A));
  }

  /** Takes in every key another sketch of the same size counted (the sketch of the union). */
  merge(o: HyperLogLog): void {
    const r = this.#registers;
    const s = o.#registers;
    for (let i = 0; i < r.length; i++) if (s[i] > r[i]) r[i] = s[i];
  }

  /** The estimated number of distinct keys counted. */
  estimate(): number {
    const r = this.#registers;
    const m = r.length;
    let sum = 0;
    let zeros = 0;
    for (let i = 0; i < m; i++) {
      sum += 2 ** -r[i];
      if (r[i] === 0) zeros++;
    }
    const alpha = m >= 128 ? 0.7213 / (1 + 1.079 / m) : m === 64 ? 0.709 : m === 32 ? 0.697 : 0.673;
    const e = (alpha * m * m) / sum;
    // Few keys: linear counting of the registers still empty is the better estimate.
    if (e <= 2.5 * m && zeros > 0) return m * Math.log(m / zeros);
    // Near 2^32 keys, 32-bit hashes collide: the correction of the original paper.
    const two32 = 2 ** 32;
    return e > two32 / 30 ? -two32 * Math.log(1 - e / two32) : e;
  }
}
