import { randomFillSync } from 'node:crypto';
import { isValidCorrelationId } from 'sluice/http';

/** Ids made per refill of the pool: one call for random bytes and one string for this many requests. */
const BATCH = 256;
const UUID_LENGTH = 36;
const DASH = 0x2d;
/** The two ASCII hex digits of every byte value, side by side. */
const HEX = new Uint8Array(512);
for (let i = 0; i < 256; i++) {
  const h = i.toString(16).padStart(2, '0');
  HEX[2 * i] = h.charCodeAt(0);
  HEX[2 * i + 1] = h.charCodeAt(1);
}
const random = new Uint8Array(16 * BATCH);
const text = Buffer.alloc(UUID_LENGTH * BATCH);
let block = '';
let next = BATCH;

/**
 * Fills the pool: random bytes from the same CSPRNG as `crypto.randomUUID`, the version and variant bits of RFC
 * 9562 section 5.4 set, written as text once for the whole batch.
 */
function refill(): void {
  randomFillSync(random);
  let o = 0;
  for (let u = 0; u < BATCH; u++) {
    const b = u * 16;
    random[b + 6] = ((random[b + 6] as number) & 0x0f) | 0x40;
    random[b + 8] = ((random[b + 8] as number) & 0x3f) | 0x80;
    for (let i = 0; i < 16; i++) {
      if (i === 4 || i === 6 || i === 8 || i === 10) text[o++] = DASH;
      const v = random[b + i] as number;
      text[o++] = HEX[2 * v] as number;
      text[o++] = HEX[2 * v + 1] as number;
    }
  }
  block = text.toString('latin1');
  next = 0;
}

/**
 * A new random (version 4) UUID for a request without one. `crypto.randomUUID` builds each id from sixteen
 * two-digit strings, about 500 bytes of garbage a request at the proxy's rate; here a batch of ids is written as one
 * string and each id is a slice of it (the same random source, the same format).
 */
export function newRequestId(): string {
  if (next === BATCH) refill();
  const start = next * UUID_LENGTH;
  next++;
  return block.slice(start, start + UUID_LENGTH);
}

/**
 * The request id: the one the client or an outer proxy sent, when `sluice/http` finds it safe to echo (short and
 * printable: it ends up in logs, headers and problem bodies), else a new random UUID.
 *
 * @param given - the incoming header value.
 */
export function requestIdOf(given: string | string[] | undefined): string {
  const v = Array.isArray(given) ? given[0] : given;
  return v !== undefined && isValidCorrelationId(v) ? v : newRequestId();
}
