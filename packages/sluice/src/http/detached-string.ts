/**
 * A copy of a string that holds on to nothing larger than itself. V8 represents a slice of a long string (13
 * characters or more) as a view of the whole, and a concatenation as a pair of its parts: an address cut from a
 * header, or from a log read in blocks of 64 KiB, would keep all of that text alive for as long as a cache keeps the
 * address. Caches copy their keys with this, once per entry, not once per lookup.
 *
 * @param s - any string.
 * @returns an equal string whose storage is its own (one character longer at most).
 */
export function detached(s: string): string {
  // Concatenation then a slice: the slice flattens the pair into fresh storage and views only that.
  return ` ${s}`.slice(1);
}
