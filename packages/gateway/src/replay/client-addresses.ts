import { ipKey, normalizeIp } from 'sluice/http';

/** Slots of the dotted-quad table: at most half are used (65,536 addresses) before it starts over. */
const SLOTS = 1 << 17;
const MASK = SLOTS - 1;

/** Int32 fields of a slot, side by side so that one cache line holds them: see {@link ClientAddresses}. */
const NUMBER = 0;
const PLACE = 1;
const PLACED_AT = 2;
const USED = 3;
const INTS = 4;

/**
 * The client addresses of log lines. Most lines carry a dotted quad, which is already canonical: it is read as a
 * 32-bit number and found in an open-addressed table. A slot's numbers (the address's value, whether the slot is
 * used, and the place the store last gave the address's key) sit side by side in one Int32Array, and its two
 * strings (the address and its key part) side by side in one array, so that a returning client costs two memory
 * loads that do not wait on each other, no string hashing, no cache lookup for its key and no allocation (a table
 * of objects made the object's read wait for the slot's: 3.9% of a replay went to that wait; five parallel arrays
 * cost five loads). The shared strings are built from the number, so they hold no reference to the log text.
 * Anything else (IPv6, IPv4 with leading zeros, a mapped address) goes to `normalizeIp` and `ipKey`, whose caches
 * are bounded the same way.
 *
 * A lookup leaves its answer in {@link ClientAddresses.ip} and {@link ClientAddresses.key}, read before the
 * next lookup.
 */
export class ClientAddresses {
  /** The canonical address of the last lookup that found one (as `normalizeIp` gives it). */
  ip = '';
  /** `ipKey(ip)` of the last lookup that found an address: handed to admission as the request's `clientIpKey`. */
  key = '';
  /** The table slot of the last lookup's dotted quad, or -1 for another address (which keeps no place). */
  slot = -1;
  /** Times the table started over: a slot read before this count changed may hold another address now. */
  startedOver = 0;
  readonly #ints = new Int32Array(SLOTS * INTS);
  /** Slot `h`'s address at `2h`, its key part at `2h + 1`. */
  readonly #strings: string[] = new Array<string>(SLOTS * 2).fill('');
  #size = 0;
  /** What {@link ClientAddresses.touch} read, kept so that the read is not optimised away. */
  #touched = 0;

  /**
   * @param s - an address as the log wrote it.
   * @param v - its {@link dottedQuadValue}, when already known (from {@link ClientAddresses.touch}).
   * @returns true with the address in {@link ClientAddresses.ip} and {@link ClientAddresses.key} (for an IPv4
   *   address, the same two strings for all its lines until the table starts over), or false when it is no IP
   *   address.
   */
  lookup(s: string, v = dottedQuadValue(s)): boolean {
    if (v < 0) {
      let ip = normalizeIp(s);
      if (ip === undefined) {
        // Envoy's `%DOWNSTREAM_REMOTE_ADDRESS%` and some load balancers' logs carry the client's port too.
        const bare = withoutPort(s);
        ip = bare === undefined ? undefined : normalizeIp(bare);
      }
      if (ip === undefined) return false;
      this.ip = ip;
      this.key = ipKey(ip);
      this.slot = -1;
      return true;
    }
    const k = v | 0;
    let h = slotOf(k);
    const ints = this.#ints;
    for (;;) {
      const at = h * INTS;
      if (ints[at + USED] === 0) break;
      if (ints[at + NUMBER] === k) {
        this.ip = this.#strings[2 * h];
        this.key = this.#strings[2 * h + 1];
        this.slot = h;
        return true;
      }
      h = (h + 1) & MASK;
    }
    if (this.#size >= SLOTS >>> 1) {
      // Starting over is cheaper than eviction and bounds the table under a flood of distinct addresses.
      ints.fill(0);
      this.#strings.fill('');
      this.#size = 0;
      this.startedOver++;
      h = slotOf(k);
    }
    const ip = `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
    // A dotted quad is its own key part: what ipKey gives, without its caches.
    const key = `ip:${ip}`;
    const at = h * INTS;
    ints[at + NUMBER] = k;
    ints[at + PLACE] = -1;
    ints[at + PLACED_AT] = -1;
    ints[at + USED] = 1;
    this.#strings[2 * h] = ip;
    this.#strings[2 * h + 1] = key;
    this.#size++;
    this.ip = ip;
    this.key = key;
    this.slot = h;
    return true;
  }

  /**
   * Reads the first table slot of an address without looking it up: a batch of lines touches every line's slot
   * first, so that the processor fetches them side by side, then looks each up (the slots are in its caches by
   * then). A returning client's lookup otherwise waits on its slot's load, line after line: 8% of a replay.
   *
   * @param s - an address as the log wrote it.
   * @returns its {@link dottedQuadValue}, to give to {@link ClientAddresses.lookup}.
   */
  touch(s: string): number {
    const v = dottedQuadValue(s);
    if (v >= 0) this.touchValue(v);
    return v;
  }

  /**
   * {@link ClientAddresses.touch} of an address whose {@link dottedQuadValue} is known (>= 0): reads its first
   * slot's numbers and the slot of its strings (the pointer only, never the string). A batch computes every
   * line's value first and then touches them in a loop of its own, so that its loads are all in flight at once:
   * computing a value between two loads kept only two or three of a batch's in flight (D-G172).
   */
  touchValue(v: number): void {
    const h = slotOf(v | 0);
    this.#touched ^= this.#ints[h * INTS + USED];
    // Compared with `undefined` (never in the table), the string is not read: only its slot is loaded.
    if (this.#strings[2 * h] === undefined) this.#touched++;
  }

  /**
   * What the replay's store last said of the key of the address in `slot` (`MemoryStore.prefetch`: the place of
   * its buckets), or -1. The store checks it against {@link ClientAddresses.placedAt}, so a stale place costs a
   * key lookup only.
   */
  place(slot: number): number {
    return this.#ints[slot * INTS + PLACE];
  }

  /** The store's `placesMoved` count when {@link ClientAddresses.place} was kept, or -1. */
  placedAt(slot: number): number {
    return this.#ints[slot * INTS + PLACED_AT];
  }

  /** Keeps the place the store gave the key of the address in `slot`, and the store's `placesMoved` count. */
  keepPlace(slot: number, place: number, placesMoved: number): void {
    const at = slot * INTS;
    this.#ints[at + PLACE] = place;
    // Kept as a 32-bit integer: past 2^31 moves the kept count no longer equals the store's, which then looks the
    // key up (the same decision, without the saving).
    this.#ints[at + PLACED_AT] = placesMoved | 0;
  }
}

/** The first slot of an address's 32-bit value (Fibonacci hashing: the high bits of the product). */
function slotOf(k: number): number {
  return Math.imul(k, 0x9e3779b1) >>> 15;
}

const PORT = /^\d{1,5}$/;

/**
 * An address written with its port (`203.0.113.9:51234`, `[2001:db8::1]:443`) or in brackets (`[2001:db8::1]`),
 * without them; `undefined` for any other text (a bare IPv6 address keeps its colons).
 */
export function withoutPort(s: string): string | undefined {
  if (s.charCodeAt(0) === 91 /* [ */) {
    const close = s.indexOf(']');
    if (close < 0) return undefined;
    const rest = s.slice(close + 1);
    if (rest !== '' && !(rest.charCodeAt(0) === 58 /* : */ && PORT.test(rest.slice(1)))) return undefined;
    return s.slice(1, close);
  }
  const colon = s.indexOf(':');
  if (colon <= 0 || s.indexOf(':', colon + 1) >= 0) return undefined;
  return PORT.test(s.slice(colon + 1)) ? s.slice(0, colon) : undefined;
}

/**
 * The value of an IPv4 address in dotted-quad form without leading zeros (the form `normalizeIp` keeps as it is),
 * from 0 to 2^32 - 1, or -1 for any other text.
 */
export function dottedQuadValue(s: string): number {
  const n = s.length;
  if (n < 7 || n > 15) return -1;
  let dots = 0;
  let value = 0;
  let octet = 0;
  let digits = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || ++dots > 3) return -1;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return -1; // a leading zero
      octet = octet * 10 + (c - 48);
      if (++digits > 3 || octet > 255) return -1;
    } else return -1;
  }
  return dots === 3 && digits > 0 ? value * 256 + octet : -1;
}
