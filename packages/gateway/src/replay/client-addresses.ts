import { ipKey, normalizeIp } from 'sluice/http';

/** Slots of the dotted-quad table: at most half are used (65,536 addresses) before it starts over. */
const SLOTS = 1 << 17;
const MASK = SLOTS - 1;

/** A client address of a log line: canonical (as `normalizeIp` gives it) and the IP part of its bucket keys. */
export interface ClientAddress {
  readonly ip: string;
  /** `ipKey(ip)`, handed to admission as the request's `clientIpKey`. */
  readonly key: string;
}

/**
 * The client addresses of log lines, one shared {@link ClientAddress} per IPv4 address. Most lines carry a dotted
 * quad, which is already canonical: it is read as a 32-bit number and found in an open-addressed table, so a
 * returning client costs no string hashing, no cache lookup for its key and no allocation. The shared strings are
 * built from the number, so they hold no reference to the log text. Anything else (IPv6, IPv4 with leading zeros,
 * a mapped address) goes to `normalizeIp` and `ipKey`, whose caches are bounded the same way.
 */
export class ClientAddresses {
  readonly #keys = new Int32Array(SLOTS);
  readonly #values: (ClientAddress | undefined)[] = new Array<ClientAddress | undefined>(SLOTS).fill(
    undefined,
  );
  #size = 0;

  /**
   * @param s - an address as the log wrote it.
   * @returns its canonical form and key (for an IPv4 address, one instance for all its lines until the table
   *   starts over), or `undefined` when it is no IP address.
   */
  lookup(s: string): ClientAddress | undefined {
    const v = dottedQuadValue(s);
    if (v < 0) {
      const ip = normalizeIp(s);
      return ip === undefined ? undefined : { ip, key: ipKey(ip) };
    }
    const k = v | 0;
    let h = Math.imul(k, 0x9e3779b1) >>> 15;
    const keys = this.#keys;
    const values = this.#values;
    for (;;) {
      const hit = values[h];
      if (hit === undefined) break;
      if (keys[h] === k) return hit;
      h = (h + 1) & MASK;
    }
    if (this.#size >= SLOTS >>> 1) {
      // Starting over is cheaper than eviction and bounds the table under a flood of distinct addresses.
      values.fill(undefined);
      this.#size = 0;
      h = Math.imul(k, 0x9e3779b1) >>> 15;
    }
    const ip = `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
    // A dotted quad is its own key part: what ipKey gives, without its caches.
    const out = { ip, key: `ip:${ip}` };
    keys[h] = k;
    values[h] = out;
    this.#size++;
    return out;
  }
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
