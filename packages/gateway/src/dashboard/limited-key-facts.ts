import { type Decision, SingleDecision } from 'sluice';
import { type DecisionLabels, NoopMetrics } from 'sluice/metrics';

/** What the dashboard shows of a limited key besides its count. */
export interface LimitedKeyFact {
  /** The identity key, without the key prefix (what `GET /keys/<key>` and an override pattern take). */
  readonly key: string;
  /** `tenant-client`, `tenant-user`, `api-key`, `address`, or the key's own prefix (`principal`, `device`...). */
  readonly kind: string;
  /** The tenant and client, the address, or the rest of the key, for people. */
  readonly who: string;
  /** The tier of the request last limited, `''` when unknown. */
  tier: string;
  /** The policy that limited it last. */
  policy: string;
  /** When it was last limited, epoch milliseconds. */
  lastSeenMs: number;
}

/** A record as one thread of `sluice serve --threads` ships it to the first thread, with the top list's hash. */
export type SharedKeyFact = LimitedKeyFact & { readonly hash: string };

/** Keys remembered; at the cap the key first recorded goes first. */
const MAX_FACTS = 4096;

/**
 * The identity behind each limited key, for the dashboard's top list (which counts keys under keyed hashes):
 * kind, tenant and client or address, tier and policy, last seen. A metrics sink of the gateway: a denial of a
 * known key updates its record in place; a new key is hashed once, with the top list's own hash, so the two join.
 * Only denials are recorded, and the table is bounded.
 */
export class LimitedKeyFacts extends NoopMetrics {
  readonly #byKey = new Map<string, LimitedKeyFact & { readonly hash: string }>();
  readonly #byHash = new Map<string, LimitedKeyFact>();
  readonly #hashKey: (key: string) => string;
  readonly #prefix: string;
  readonly #now: () => number;

  /**
   * @param hashKey - the top list's hash of a bucket key.
   * @param keyPrefix - the bucket key prefix, left out of `key`.
   * @param now - epoch milliseconds.
   */
  constructor(hashKey: (key: string) => string, keyPrefix: string, now: () => number) {
    super();
    this.#hashKey = hashKey;
    this.#prefix = keyPrefix;
    this.#now = now;
  }

  override recordDecision(decision: Decision, labels?: DecisionLabels): void {
    if (decision.allowed) return;
    const tier = labels?.tier ?? '';
    if (decision instanceof SingleDecision) {
      if (decision.limited && !decision.policy.shadow) this.#note(decision.key, decision.policy.name, tier);
      return;
    }
    const v = decision.violated;
    for (let i = 0; i < v.length; i++) this.#note(v[i].key, v[i].policy.name, tier);
  }

  /** The record of the key listed under `hash`, if this process (or a thread that shipped it) limited it lately. */
  of(hash: string): LimitedKeyFact | undefined {
    return this.#byHash.get(hash);
  }

  /**
   * The records of the keys of `rows` this thread knows, for its feed to the first thread of `sluice serve
   * --threads`: the first thread lists every thread's limited keys by hash, and only the thread that limited a key
   * knows who it is.
   *
   * @param rows - the top list this thread ships.
   */
  shipped(rows: readonly { readonly hash: string }[]): SharedKeyFact[] {
    const out: SharedKeyFact[] = [];
    for (const r of rows) {
      const f = this.#byHash.get(r.hash);
      if (f !== undefined) out.push({ ...f, hash: r.hash });
    }
    return out;
  }

  /**
   * Takes the records another thread shipped (see {@link LimitedKeyFacts.shipped}): a key not known here is
   * added (the table stays bounded), a known one takes the newer tier, policy and time.
   */
  merge(facts: readonly SharedKeyFact[]): void {
    for (const g of facts) {
      const f = this.#byHash.get(g.hash);
      if (f === undefined) {
        this.#add(this.#prefix + g.key, { ...g });
      } else if (g.lastSeenMs > f.lastSeenMs) {
        f.tier = g.tier;
        f.policy = g.policy;
        f.lastSeenMs = g.lastSeenMs;
      }
    }
  }

  #add(bucketKey: string, f: LimitedKeyFact & { readonly hash: string }): void {
    if (this.#byKey.size >= MAX_FACTS) {
      const [oldest, gone] = this.#byKey.entries().next().value as [string, { hash: string }];
      this.#byKey.delete(oldest);
      this.#byHash.delete(gone.hash);
    }
    this.#byKey.set(bucketKey, f);
    this.#byHash.set(f.hash, f);
  }

  #note(bucketKey: string, policy: string, tier: string): void {
    let f = this.#byKey.get(bucketKey);
    if (f === undefined) {
      const key =
        this.#prefix !== '' && bucketKey.startsWith(this.#prefix)
          ? bucketKey.slice(this.#prefix.length)
          : bucketKey;
      f = { ...describeKey(key), key, tier, policy, lastSeenMs: 0, hash: this.#hashKey(bucketKey) };
      this.#add(bucketKey, f);
    }
    f.tier = tier;
    f.policy = policy;
    f.lastSeenMs = this.#now();
  }
}

/**
 * The kind of an identity key and who it names: `tenant:acme:client:web` is `tenant-client` `acme / web`,
 * `ip:203.0.113.9` is `address` `203.0.113.9`, `apikey:<hash>` is `api-key`.
 */
export function describeKey(key: string): { readonly kind: string; readonly who: string } {
  const parts = key.split(':');
  const un = (s: string) => s.replaceAll('%3A', ':').replaceAll('%25', '%');
  if (parts[0] === 'tenant' && parts.length === 4) {
    const kind = parts[2] === 'client' ? 'tenant-client' : parts[2] === 'user' ? 'tenant-user' : 'tenant';
    return { kind, who: `${un(parts[1])} / ${un(parts[3])}` };
  }
  if (parts[0] === 'ip') return { kind: 'address', who: key.slice(3) };
  if (parts[0] === 'apikey') return { kind: 'api-key', who: key.slice(7) };
  const colon = key.indexOf(':');
  return colon < 0 ? { kind: 'custom', who: key } : { kind: parts[0], who: un(key.slice(colon + 1)) };
}
