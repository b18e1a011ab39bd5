import { ipKey, normalizeIp } from 'sluice/http';

/** Slots of the dotted-quad table: at most half are used (65,536 addresses) before it starts over. */
const SLOTS = 1 << 17;
const MASK = SLOTS - 1;

/**
 * The client addresses of log lines. Most lines carry a dotted quad, which is already canonical: it is read as a
 * 32-bit number and found in an open-addressed table whose slots hold the address's number, its text and its key
 * part in three parallel arrays, so a returning client costs no string hashing, no cache lookup for its key and no
 * allocation, and the three reads do not wait on each other (a table of objects made the object's read wait for
 * the slot's: 3.9% of a replay went to that wait). The shared strings are built from the number, so they hold no
 * reference to the log text. Anything else (IPv6, IPv4 with leading zeros, a mapped address) goes to
 * `normalizeIp` and `ipKey`, whose caches are bounded the same way.
 *
 * A lookup leaves its answer in {@link ClientAddresses.ip} and {@link ClientAddresses.key}, read before the
 * next lookup.
 */
export class ClientAddresses {
  /** The canonical address of the last lookup that found one (as `normalizeIp` gives it). */
  ip = '';
  /** `ipKey(ip)` of the last lookup that found an address: handed to admission as the request's `clientIpKey`. */
  key = '';
  readonly #numbers = new Int32Array(SLOTS);
  readonly #ips: (string | undefined)[] = new Array<string | undefined>(SLOTS).fill(undefined);
  readonly #keys: string[] = new Array<string>(SLOTS).fill('');
  #size = 0;

  /**
   * @param s - an address as the log wrote it.
   * @returns true with the address in {@link ClientAddresses.ip} and {@link ClientAddresses.key} (for an IPv4
   *   address, the same two strings for all its lines until the table starts over), or false when it is no IP
   *   address.
   */
  lookup(s: string): boolean {
    const v = dottedQuadValue(s);
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
      return true;
    }
    const k = v | 0;
    let h = Math.imul(k, 0x9e3779b1) >>> 15;
    const numbers = this.#numbers;
    const ips = this.#ips;
    for (;;) {
      const hit = ips[h];
      if (hit === undefined) break;
      if (numbers[h] === k) {
        this.ip = hit;
        this.key = this.#keys[h];
        return true;
      }
      h = (h + 1) & MASK;
    }
    if (this.#size >= SLOTS >>> 1) {
      // Starting over is cheaper than eviction and bounds the table under a flood of distinct addresses.
      ips.fill(undefined);
      this.#keys.fill('');
      this.#size = 0;
      h = Math.imul(k, 0x9e3779b1) >>> 15;
    }
    const ip = `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
    // A dotted quad is its own key part: what ipKey gives, without its caches.
    const key = `ip:${ip}`;
    numbers[h] = k;
    ips[h] = ip;
    this.#keys[h] = key;
    this.#size++;
    this.ip = ip;
    this.key = key;
    return true;
  }
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
