import { createHash } from 'node:crypto';

/**
 * SHA-256 of a string as unpadded base64url, truncated to `chars` characters (22 characters are 132 bits:
 * collisions are out of reach for any number of keys a limiter holds, and the key stays short).
 *
 * @param value - the text to hash.
 * @param chars - characters kept, 1 to 43; default 22.
 */
export function sha256Base64Url(value: string, chars = 22): string {
  return createHash('sha256').update(value).digest('base64url').slice(0, chars);
}

/**
 * Bounds the length of a bucket key: a key longer than `maxLength` keeps its kind prefix (the text up to the
 * first `:`) and replaces the rest with `#` and a hash, so a client cannot grow the store's memory through long
 * identifiers and keys of different kinds still never collide.
 *
 * @param key - the bucket key, for example `principal:alice`.
 * @param maxLength - the longest key kept as it is.
 * @returns the key itself, or for example `principal:#Qm9vb...`.
 *
 * @example
 * ```ts
 * boundKey('principal:' + 'x'.repeat(500), 200); // 'principal:#<22 characters>'
 * ```
 */
export function boundKey(key: string, maxLength: number): string {
  if (key.length <= maxLength) return key;
  const colon = key.indexOf(':');
  const prefix = colon > 0 && colon < 32 ? key.slice(0, colon + 1) : '';
  return `${prefix}#${sha256Base64Url(key)}`;
}

/**
 * The partition key (`pk`) of the draft-11 headers: the first 12 bytes of SHA-256 of the bucket key, so that a
 * client can tell buckets apart without learning the key (which may hold an IP address or a tenant id).
 */
export function partitionKeyOf(key: string): Uint8Array {
  return new Uint8Array(createHash('sha256').update(key).digest().subarray(0, 12));
}
