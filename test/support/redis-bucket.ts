/**
 * Reads a Redis store's bucket back as units and time, whichever of its two formats it is in (lua-script.ts): the
 * server-clock format, units short of full expiring at the bucket's time plus its time to full (the time is the
 * expiry, from PEXPIRETIME, less the time to full), or the injected-clock format `<units>:<last ms>`.
 *
 * @example
 * ```ts
 * const b = await readBucket(redis, store.keyOf(policy, 'user:1'), policy);
 * // b.units, b.last (server ms), b.expiresAt
 * ```
 */
import { msUntil, type Policy } from '../../packages/sluice/src/core/index.js';

/** The command used here, as ioredis's `Redis` and `Cluster` offer it. */
export interface BucketReader {
  call(command: string, ...args: string[]): Promise<unknown>;
}

const READ = "return {redis.call('GET', KEYS[1]), redis.call('PEXPIRETIME', KEYS[1])}";

/** A stored bucket: its units, its time in the server's milliseconds and its absolute expiry. */
export interface StoredBucket {
  readonly units: number;
  readonly last: number;
  readonly expiresAt: number;
  /** The stored string as it is. */
  readonly raw: string;
}

/** The bucket under `key`, or undefined when there is none (a full bucket). */
export async function readBucket(
  client: BucketReader,
  key: string,
  policy: Policy,
): Promise<StoredBucket | undefined> {
  // One script reads both, so the key cannot expire between the value and its expiry.
  const [raw, expiresAt] = (await client.call('EVAL', READ, '1', key)) as [string | null, number];
  if (raw === null) return undefined;
  const at = Number(expiresAt);
  if (raw.includes(':')) {
    const [units, last] = raw.split(':').map(Number);
    return { units, last, expiresAt: at, raw };
  }
  // Units short of full, expiring at the bucket's time plus its time to full (the engine's own msUntil).
  const units = policy.capacityUnits - Number(raw);
  return { units, last: at - msUntil(policy, units, policy.capacityUnits), expiresAt: at, raw };
}
