import { createHmac, randomBytes } from 'node:crypto';
import {
  type Clock,
  type Decision,
  integerOption,
  invalidOption,
  monotonicClock,
  objectOption,
  rejectUnknownKeys,
  SingleDecision,
} from '../core/index.js';
import { NoopMetrics } from '../metrics/index.js';
import { SpaceSaving } from './space-saving.js';

/** Options of {@link TopLimitedKeys}. */
export interface TopLimitedKeysOptions {
  /** Counters kept (the K of top-K). Integer from 1 to 100,000; default 100. */
  readonly capacity?: number;
  /**
   * Secret of the key hash (HMAC-SHA256). Give the same secret to every process to get the same hashes fleet-wide;
   * default a random secret per process. A plain hash is never used: the space of IPv4 addresses is small enough
   * to reverse one.
   */
  readonly hashSecret?: string;
  /** Hex characters of the hash shown. Integer from 8 to 64; default 16. */
  readonly hashLength?: number;
  /** Length of a period in milliseconds: the list covers the current and the previous period. 0 means since start. Default 0. */
  readonly periodMs?: number;
  /** The clock of periods. Default the monotonic clock. */
  readonly clock?: Clock;
}

/** One entry of the top limited keys. */
export interface LimitedKey {
  /** The HMAC of the key, hex, truncated to `hashLength`. */
  readonly hash: string;
  /** The policy that denied it most recently. */
  readonly policy: string;
  /** Denials counted (space-saving estimate, never below the true count). */
  readonly count: number;
  /** The largest overestimate in `count`. */
  readonly error: number;
}

/**
 * The keys denied most often, for the admin API and the dashboard: a bounded space-saving summary fed as a
 * {@link LimiterMetrics} sink (combine it with the Prometheus sink). Keys are shown only as keyed hashes, so the
 * list can be displayed without exposing IPs, user ids or tokens; {@link TopLimitedKeys.hashKey} finds a known
 * key's entry. Memory is bounded by `capacity` whatever the traffic.
 *
 * @example
 * ```ts
 * const top = new TopLimitedKeys({ capacity: 200, hashSecret: process.env.KEY_HASH_SECRET });
 * const metrics = combineMetrics(new PrometheusMetrics(), top);
 * top.top(10); // [{ hash: '3f1c...', policy: 'rl.write', count: 412, error: 0 }]
 * ```
 */
export class TopLimitedKeys extends NoopMetrics {
  readonly #capacity: number;
  readonly #secret: string | Buffer;
  readonly #hashLength: number;
  readonly #periodMs: number;
  readonly #clock: Clock;
  #current: SpaceSaving<string>;
  #previous: SpaceSaving<string> | undefined;
  #periodStart: number;
  readonly #policyOf = new Map<string, string>();

  /** @throws SluiceError `ERR_INVALID_OPTION` for an invalid option. */
  constructor(options: TopLimitedKeysOptions = {}) {
    super();
    const o = objectOption('TopLimitedKeys options', options);
    rejectUnknownKeys('TopLimitedKeys options', o, [
      'capacity',
      'hashSecret',
      'hashLength',
      'periodMs',
      'clock',
    ]);
    this.#capacity = integerOption('capacity', o.capacity, 1, 100_000, 100);
    if (o.hashSecret !== undefined && (typeof o.hashSecret !== 'string' || o.hashSecret.length < 16)) {
      throw invalidOption('hashSecret', 'a string of at least 16 characters', '(hidden)');
    }
    this.#secret = (o.hashSecret as string | undefined) ?? randomBytes(32);
    this.#hashLength = integerOption('hashLength', o.hashLength, 8, 64, 16);
    this.#periodMs = integerOption('periodMs', o.periodMs, 0, 2 ** 31 - 1, 0);
    this.#clock = (o.clock as Clock | undefined) ?? monotonicClock;
    this.#current = new SpaceSaving(this.#capacity);
    this.#periodStart = this.#clock.now();
  }

  /** Counts the keys of the enforcing policies that denied `decision`. */
  override recordDecision(decision: Decision): void {
    if (decision.allowed) return;
    if (decision instanceof SingleDecision) {
      if (decision.limited && !decision.policy.shadow) this.offer(decision.key, decision.policy.name);
      return;
    }
    const v = decision.violated;
    for (let i = 0; i < v.length; i++) this.offer(v[i].key, v[i].policy.name);
  }

  /** Counts one denial of `key` by `policy` (for callers that deny outside the limiter, such as a deny cache). */
  offer(key: string, policy: string): void {
    this.#rotate();
    const evicted = this.#current.offer(key);
    if (evicted !== undefined && this.#previous?.has(evicted) !== true) this.#policyOf.delete(evicted);
    if (this.#policyOf.get(key) !== policy) this.#policyOf.set(key, policy);
  }

  /** The `n` keys denied most often (current and previous period), highest first, as hashes. */
  top(n = 10): LimitedKey[] {
    this.#rotate();
    const sums = new Map<string, { count: number; error: number }>();
    for (const sketch of this.#previous ? [this.#previous, this.#current] : [this.#current]) {
      for (const h of sketch.top()) {
        const s = sums.get(h.item);
        if (s === undefined) sums.set(h.item, { count: h.count, error: h.error });
        else {
          s.count += h.count;
          s.error += h.error;
        }
      }
    }
    return [...sums]
      .sort((a, b) => b[1].count - a[1].count)
      .slice(0, n)
      .map(([key, s]) => ({
        hash: this.hashKey(key),
        policy: this.#policyOf.get(key) ?? '',
        count: s.count,
        error: s.error,
      }));
  }

  /** The hash under which `key` is listed. */
  hashKey(key: string): string {
    return createHmac('sha256', this.#secret).update(key).digest('hex').slice(0, this.#hashLength);
  }

  /** Forgets every key. */
  clear(): void {
    this.#current.clear();
    this.#previous = undefined;
    this.#policyOf.clear();
    this.#periodStart = this.#clock.now();
  }

  #rotate(): void {
    if (this.#periodMs === 0) return;
    const now = this.#clock.now();
    if (now - this.#periodStart < this.#periodMs) return;
    const periods = Math.floor((now - this.#periodStart) / this.#periodMs);
    this.#previous = periods === 1 ? this.#current : undefined;
    this.#current = new SpaceSaving(this.#capacity);
    this.#periodStart += periods * this.#periodMs;
    // Keep the policy names of keys still listed only, so the map stays bounded by twice the capacity.
    const keep = new Set<string>();
    for (const h of this.#previous?.top() ?? []) keep.add(h.item);
    for (const k of [...this.#policyOf.keys()]) if (!keep.has(k)) this.#policyOf.delete(k);
  }
}
