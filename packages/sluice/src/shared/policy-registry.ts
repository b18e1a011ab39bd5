import { definePolicy, ErrorCode, type Policy, SluiceError } from '../core/index.js';
import { policyFingerprint } from '../core/policy-fingerprint.js';
import { lock, unlock } from './group-lock.js';
import { hashKey } from './key-hash.js';
import { H_POLICY_COUNT, H_POLICY_LOCK, H_SEED, PARAM_FLOATS, type TableViews } from './table-memory.js';

/**
 * The policies of one shared table. Threads build their own `Policy` objects from the same configuration, so a
 * policy is known by value (name, sizes, shadow, queue, refill) rather than by object: equal definitions in two
 * threads share buckets. Each thread caches its objects' indexes, so the shared list is read only the first
 * time a thread meets a policy object.
 */
export class PolicyRegistry {
  readonly #t: TableViews;
  readonly #seed: number;
  #indexOf = new WeakMap<Policy, number>();
  /** The arithmetic of each index, rebuilt from the shared parameters (for sweeps and evictions). */
  #byIndex: Policy[] = [];
  #lastPolicy: Policy | undefined;
  #lastIndex = -1;
  readonly #lanes = new Int32Array(4);

  constructor(table: TableViews) {
    this.#t = table;
    this.#seed = table.header[H_SEED];
  }

  /**
   * The index of `policy` in the table, registering it on first use by any thread.
   *
   * @throws SluiceError `ERR_TOO_MANY_POLICIES` beyond `maxPolicies` distinct definitions.
   */
  indexOf(policy: Policy): number {
    if (policy === this.#lastPolicy) return this.#lastIndex;
    let index = this.#indexOf.get(policy);
    if (index === undefined) {
      index = this.#register(policy);
      this.#indexOf.set(policy, index);
    }
    this.#lastPolicy = policy;
    this.#lastIndex = index;
    return index;
  }

  /** The policy arithmetic of an index some thread registered. */
  at(index: number): Policy {
    let p = this.#byIndex[index];
    if (p === undefined) {
      const f = this.#t.params;
      const o = index * PARAM_FLOATS;
      const stepped = f[o + 6] === 1;
      // A concurrency policy: its slots, and no window (its retry hint is the caller's, never read from here).
      const concurrent = f[o + 7];
      p =
        concurrent > 0
          ? definePolicy({ name: `shared#${index}`, concurrent, shadow: f[o + 3] === 1 })
          : definePolicy({
              name: `shared#${index}`,
              quota: f[o],
              window: f[o + 1],
              burst: f[o + 2],
              shadow: f[o + 3] === 1,
              queue: f[o + 4] > 0 ? { limit: f[o + 4], maxWaitMs: f[o + 5] } : undefined,
              refill: stepped ? { tokens: f[o], every: f[o + 1] } : undefined,
            });
      this.#byIndex[index] = p;
    }
    return p;
  }

  #register(policy: Policy): number {
    const t = this.#t;
    const lanes = this.#lanes;
    hashKey(registryFingerprint(policy), 0, this.#seed, lanes, 0);
    lock(t.header, H_POLICY_LOCK);
    try {
      const count = Atomics.load(t.header, H_POLICY_COUNT);
      const h = t.policyHashes;
      for (let i = 0; i < count; i++) {
        const o = i * 4;
        if (h[o] === lanes[0] && h[o + 1] === lanes[1] && h[o + 2] === lanes[2] && h[o + 3] === lanes[3]) {
          return i;
        }
      }
      if (count >= t.maxPolicies) {
        throw new SluiceError(
          ErrorCode.TooManyPolicies,
          `a shared store holds at most ${t.maxPolicies} distinct policies (option maxPolicies); policy "${policy.name}" would be one more`,
          { limit: t.maxPolicies, policy: policy.name },
        );
      }
      h.set(lanes, count * 4);
      const f = t.params;
      const o = count * PARAM_FLOATS;
      f[o] = policy.quota;
      f[o + 1] = policy.window;
      f[o + 2] = policy.burst;
      f[o + 3] = policy.shadow ? 1 : 0;
      f[o + 4] = policy.queue?.limit ?? 0;
      f[o + 5] = policy.queue?.maxWaitMs ?? 0;
      f[o + 6] = policy.stepMs > 0 ? 1 : 0;
      f[o + 7] = policy.concurrent;
      Atomics.store(t.header, H_POLICY_COUNT, count + 1);
      return count;
    } finally {
      unlock(t.header, H_POLICY_LOCK);
    }
  }
}

/**
 * What files a policy's buckets in the table: its definition (`policyFingerprint`), but for a concurrency policy
 * its name alone. Its buckets count the slots taken (slot-units.ts), so a reload that changes its
 * limit keeps the requests in flight counted and applies the new limit to them (D-G186).
 */
function registryFingerprint(p: Policy): string {
  return p.concurrent > 0 ? `slots\u0000${p.bucketName ?? p.name}` : policyFingerprint(p);
}
