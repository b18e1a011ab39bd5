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
import type { Policy } from '../../packages/sluice/src/core/index.js';

/** The two commands read here, as ioredis's `Redis` and `Cluster` offer them. */
export interface BucketReader {
  get(key: string): Promise<string | null>;
  call(command: string, ...args: string[]): Promise<unknown>;
}

/** A stored bucket: its units, its time in the server's milliseconds and its absolute expiry. */
export interface StoredBucket {
  readonly units: number;
  readonly last: number;
  readonly expiresAt: number;
  /** The stored string as it is. */
  readonly raw: string;
}

/** Milliseconds for a bucket of `policy` to refill `deficit` units: its TTL beyond its own time. */
export function timeToFull(policy: Policy, deficit: number): number {
  if (policy.stepMs > 0) return Math.ceil(deficit / (policy.quota * policy.unitsPerToken)) * policy.stepMs;
  return Math.ceil(deficit / policy.quota);
}

/** The bucket under `key`, or undefined when there is none (a full bucket). */
export async function readBucket(
  client: BucketReader,
  key: string,
  policy: Policy,
): Promise<StoredBucket | undefined> {
  const [raw, expiresAt] = await Promise.all([client.get(key), client.call('PEXPIRETIME', key)]);
  if (raw === null) return undefined;
  const at = Number(expiresAt);
  if (raw.includes(':')) {
    const [units, last] = raw.split(':').map(Number);
    return { units, last, expiresAt: at, raw };
  }
  const deficit = Number(raw);
  return {
    units: policy.capacityUnits - deficit,
    last: at - timeToFull(policy, deficit),
    expiresAt: at,
    raw,
  };
}
