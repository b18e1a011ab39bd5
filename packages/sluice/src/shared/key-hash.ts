/*
 * The 128-bit identity of a (policy, key) pair: four 32-bit FNV-1a style lanes with different multipliers,
 * seeded per table, each finished with murmur3's fmix32. Lanes 0 and 1 pick the two candidate groups; all four
 * are stored and compared, so two live keys share a bucket only if all 128 bits agree (about n^2 / 2^129 for n
 * keys: 1 in 10^26 at a million keys). The per-table random seed keeps collisions from being computed offline.
 */

/** Where {@link hashKey} writes its four lanes; reused, so hashing allocates nothing. */
export type HashLanes = Int32Array;

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}

/**
 * Hashes `key` under `salt` (the policy's index in the table, or 0 for a policy fingerprint) into `out[at..at+3]`.
 *
 * @param seed - the table's random seed.
 */
export function hashKey(key: string, salt: number, seed: number, out: HashLanes, at: number): void {
  let a = (0x811c9dc5 ^ seed) | 0;
  let b = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ salt;
  let c = Math.imul(seed ^ 0x7f4a7c15, 0xc2b2ae35) ^ Math.imul(salt, 0x27d4eb2f);
  let d = Math.imul(seed ^ 0x165667b1, 0x9e3779b1) ^ key.length;
  a ^= salt;
  for (let i = 0; i < key.length; i++) {
    const ch = key.charCodeAt(i);
    a = Math.imul(a ^ ch, 0x01000193);
    b = Math.imul(b ^ ch, 0x5bd1e995);
    c = Math.imul(c ^ ch, 0x27d4eb2f);
    d = Math.imul(d ^ ch, 0x165667b1);
  }
  out[at] = fmix(a ^ key.length);
  out[at + 1] = fmix(b ^ Math.imul(a, 0x9e3779b1));
  out[at + 2] = fmix(c ^ salt);
  out[at + 3] = fmix(d ^ b);
}
