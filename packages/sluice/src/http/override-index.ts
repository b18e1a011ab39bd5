import type { OverrideRule } from '../core/index.js';
import type { OverrideDelta } from '../core/override-log.js';
import { detached } from './detached-string.js';
import { type IpRange, inRange, normalizeIp, parseAddress } from './ip-address.js';
import { escapeKeyPart } from './keys.js';
import {
  admits,
  type CompiledOverride,
  compile,
  narrowness,
  type OverridePatternKind,
} from './override-entry.js';
import { overridePattern } from './override-pattern.js';
import { PrefixTrie } from './override-trie.js';

export type { CompiledOverride, OverridePatternKind } from './override-entry.js';
export {
  type CanonicalPatternOptions,
  canonicalOverridePattern,
  overridePattern,
} from './override-pattern.js';

const NONE: readonly CompiledOverride[] = Object.freeze([]);
/** Keys (and client IPs) whose candidates are remembered, cleared at the cap so a flood cannot grow it. */
const MEMO_MAX = 8192;
/** Longer keys are looked up each time (a walk of the trie as long as the key), not remembered. */
const MEMO_KEY_CHARS = 512;

/** Where one rule sits in an {@link OverrideIndex}, to delete it when it is replaced or removed. */
interface Placed {
  readonly entry: CompiledOverride;
  readonly pattern: OverridePatternKind;
  /** The exact key or prefix, with the limiter's key prefix. */
  readonly at: string;
}

/**
 * The current rules compiled for lookups: exact keys in a `Map`, prefixes in a character trie, single addresses in
 * a `Map` by canonical address, address ranges in a list. A key's candidates (every rule whose pattern matches it,
 * narrowest first) are remembered, and so are the address and range rules of a client IP (the address is parsed
 * once, not once per range and policy; one address or a range holds whatever the bucket key), so a returning key
 * costs a `Map` lookup or two and a short scan, whatever the number of rules. Rules on a whole tenant
 * (`tenant:acme`, `tenant:acme:*`) are also found by the caller's tenant, remembered per tenant, whatever its
 * bucket key (an address, an API key): a tenant block holds against every request of the tenant. A store's changes are applied rule
 * by rule ({@link OverrideIndex.apply}): a write to a store of 100,000 rules compiles one rule, not all of them.
 */
export class OverrideIndex {
  readonly #exact = new Map<string, CompiledOverride[]>();
  readonly #trie = new PrefixTrie<CompiledOverride>();
  #ranges: { readonly range: IpRange; readonly entry: CompiledOverride }[] = [];
  /** Rules on one address, by canonical address: found in one `Map` read, however many addresses are blocked. */
  readonly #addresses = new Map<string, CompiledOverride[]>();
  /** Address ranges and single addresses held: while none is, the client IP is not looked up. */
  #byAddress = 0;
  readonly #memo = new Map<string, readonly CompiledOverride[]>();
  readonly #byIp = new Map<string, readonly CompiledOverride[]>();
  readonly #byId = new Map<string, Placed>();
  /** The rules on a whole tenant, by tenant (see {@link OverrideIndex.find}). */
  readonly #byTenant = new Map<string, readonly CompiledOverride[]>();
  /**
   * Prefix rules that take in every key of some tenant: while none is held, a request's tenant is not looked up
   * (no string built, no `Map` read).
   */
  #tenantWide = 0;
  readonly #keyPrefix: string;

  /**
   * @param rules - the rules of a snapshot (patterns already validated; a malformed stored one is skipped).
   * @param keyPrefix - the limiter's bucket key prefix, put before every key pattern.
   */
  constructor(rules: readonly OverrideRule[], keyPrefix = '') {
    this.#keyPrefix = keyPrefix;
    // A list built whole is taken as it is: stores hold one rule per id, and a list given by hand keeps them all.
    for (const rule of rules) this.#add(rule);
    this.#ranges.sort((a, b) => b.entry.rank - a.entry.rank);
  }

  /** Rules held. */
  get size(): number {
    return this.#byId.size;
  }

  /**
   * Applies a store's changes in order: a rule set replaces the one of its id, a removal deletes it. What was
   * remembered per key and per address is forgotten, since a changed rule may match any of them.
   *
   * @param deltas - from `OverrideSnapshot.changesSince`.
   */
  apply(deltas: readonly OverrideDelta[]): void {
    if (deltas.length === 0) return;
    let ranges = false;
    for (const d of deltas) {
      ranges = this.#delete(d.id) || ranges;
      if (d.rule !== undefined) ranges = this.#add(d.rule) || ranges;
    }
    // Stable: rules of equal rank stay in the order they were set, as a list built whole has them.
    if (ranges) this.#ranges.sort((a, b) => b.entry.rank - a.entry.rank);
    this.#memo.clear();
    this.#byIp.clear();
    this.#byTenant.clear();
  }

  /** Compiles and places one rule (the caller deleted any of its id); true when it is an address range. */
  #add(rule: OverrideRule): boolean {
    let p: OverridePatternKind;
    try {
      p = overridePattern(rule.pattern);
    } catch {
      return false;
    }
    const entry = compile(
      rule,
      narrowness(p) + (rule.policy !== undefined ? 2 : rule.tier !== undefined ? 1 : 0),
    );
    const at = p.kind === 'range' || p.kind === 'address' ? '' : this.#keyPrefix + p.value;
    this.#byId.set(rule.id, { entry, pattern: p, at });
    if (p.kind === 'range') {
      this.#ranges.push({ range: p.range, entry });
      this.#byAddress++;
      return true;
    }
    if (p.kind === 'address') {
      const list = this.#addresses.get(p.value);
      if (list === undefined) this.#addresses.set(p.value, [entry]);
      else list.push(entry);
      this.#byAddress++;
      return false;
    }
    if (p.kind === 'exact') {
      const list = this.#exact.get(at);
      if (list === undefined) this.#exact.set(at, [entry]);
      else list.push(entry);
    } else {
      this.#trie.add(at, entry);
      if (coversTenant(p.value)) this.#tenantWide++;
    }
    return false;
  }

  /** Deletes the rule of an id; true when it was an address range. */
  #delete(id: string): boolean {
    const placed = this.#byId.get(id);
    if (placed === undefined) return false;
    this.#byId.delete(id);
    const { entry, pattern, at } = placed;
    if (pattern.kind === 'range') {
      this.#ranges = this.#ranges.filter((r) => r.entry !== entry);
      this.#byAddress--;
      return true;
    }
    if (pattern.kind === 'address') {
      this.#byAddress--;
      const list = this.#addresses.get(pattern.value);
      const rest = list?.filter((e) => e !== entry) ?? [];
      if (rest.length === 0) this.#addresses.delete(pattern.value);
      else this.#addresses.set(pattern.value, rest);
      return false;
    }
    if (pattern.kind === 'prefix') {
      this.#trie.delete(at, entry);
      if (coversTenant(pattern.value)) this.#tenantWide--;
      return false;
    }
    const list = this.#exact.get(at);
    if (list !== undefined) {
      const rest = list.filter((e) => e !== entry);
      if (rest.length === 0) this.#exact.delete(at);
      else this.#exact.set(at, rest);
    }
    return false;
  }

  /**
   * The narrowest rule in force for one bucket: its key matches the pattern, or the client IP is in the range,
   * or the caller's tenant is one the pattern takes in whole (`tenant:acme`, `tenant:acme:*`, `tenant:ac*`), and
   * its scope admits the policy and tier. A tenant's rule ranks as the prefix it is: an exact key or an address
   * range still lets one client through by name, as it does among the tenant's own keys.
   *
   * @param key - the bucket key, with the limiter's prefix.
   * @param policy - the policy's name.
   * @param tier - the caller's tier, if any.
   * @param ip - the client IP, for address ranges.
   * @param clock - epoch milliseconds, read only when some rule matches: a rule past its end is skipped.
   * @param tenant - the caller's tenant, as the identity gives it (unescaped), if any.
   * @param concurrent - true for a concurrency policy, which `limit` rules leave as configured.
   */
  find(
    key: string,
    policy: string,
    tier: string | undefined,
    ip: string | undefined,
    clock: () => number,
    tenant?: string,
    concurrent = false,
  ): CompiledOverride | undefined {
    let list = this.#memo.get(key);
    if (list === undefined) {
      list = this.#candidates(key);
      // A key as built before hashing can be as long as a header: remembered only up to a bound, so the memo
      // cannot hold megabytes of them.
      if (key.length <= MEMO_KEY_CHARS) {
        if (this.#memo.size >= MEMO_MAX) this.#memo.clear();
        this.#memo.set(detached(key), list);
      }
    }
    const byTenant =
      this.#tenantWide === 0 || typeof tenant !== 'string' || tenant === '' ? NONE : this.#ofTenant(tenant);
    // The client IP's rules (one address, ranges) are remembered per address: a `Map` read for a returning client.
    const inside = ip === undefined || this.#byAddress === 0 ? NONE : this.#rangesOf(ip);
    if (list.length === 0 && byTenant.length === 0 && inside.length === 0) return undefined;
    const nowMs = clock();
    // The lists are narrowest first: merged by rank, so a range rule outranks a key prefix (a block of
    // ip:203.0.113.0/24 is not lifted by an override of ip:*), and one address ranks as an exact key. A tenant
    // rule the key matches too is in two lists: found in either, it is the same rule.
    let i = 0;
    let j = 0;
    let k = 0;
    for (;;) {
      let e: CompiledOverride | undefined;
      let from = 0;
      if (i < list.length) e = list[i];
      if (j < inside.length && (e === undefined || inside[j].rank > e.rank)) {
        e = inside[j];
        from = 1;
      }
      if (k < byTenant.length && (e === undefined || byTenant[k].rank > e.rank)) {
        e = byTenant[k];
        from = 2;
      }
      if (e === undefined) return undefined;
      if (from === 0) i++;
      else if (from === 1) j++;
      else k++;
      if (admits(e, policy, tier, nowMs, concurrent)) return e;
    }
  }

  /** The rules that take in every key of a tenant, narrowest first. */
  #ofTenant(tenant: string): readonly CompiledOverride[] {
    let list = this.#byTenant.get(tenant);
    if (list === undefined) {
      // Every prefix of the tenant's keys' common start (`tenant:acme:`) covers the whole tenant.
      const found = this.#trie.collect(`${this.#keyPrefix}tenant:${escapeKeyPart(tenant)}:`, undefined);
      list = found === undefined ? NONE : found.sort((a, b) => b.rank - a.rank);
      if (tenant.length <= MEMO_KEY_CHARS) {
        if (this.#byTenant.size >= MEMO_MAX) this.#byTenant.clear();
        this.#byTenant.set(detached(tenant), list);
      }
    }
    return list;
  }

  /** The rules on an address and on the ranges it is in, narrowest first. */
  #rangesOf(ip: string): readonly CompiledOverride[] {
    let list = this.#byIp.get(ip);
    if (list === undefined) {
      const canonical = normalizeIp(ip);
      const address = canonical === undefined ? undefined : parseAddress(canonical);
      const own = canonical === undefined ? undefined : this.#addresses.get(canonical);
      const out: CompiledOverride[] = own === undefined ? [] : [...own];
      if (address !== undefined) {
        for (const r of this.#ranges) if (inRange(address, r.range)) out.push(r.entry);
      }
      // Stable: rules of equal rank stay in the order they were set.
      list = out.length === 0 ? NONE : out.sort((a, b) => b.rank - a.rank);
      if (this.#byIp.size >= MEMO_MAX) this.#byIp.clear();
      this.#byIp.set(detached(ip), list);
    }
    return list;
  }

  #candidates(key: string): readonly CompiledOverride[] {
    const exact = this.#exact.get(key);
    let out: CompiledOverride[] | undefined = exact === undefined ? undefined : [...exact];
    if (this.#trie.size > 0) out = this.#trie.collect(key, out);
    if (out === undefined) return NONE;
    return out.sort((a, b) => b.rank - a.rank);
  }
}

/**
 * Whether a prefix (without the key prefix) takes in every key of some tenant: it is a prefix of `tenant:<t>:`
 * (`tenant:acme:`, `tenant:ac`, `tenant:`, `t`). A tenant name holds no ":" (keys escape it).
 */
function coversTenant(prefix: string): boolean {
  if ('tenant:'.startsWith(prefix)) return true;
  if (!prefix.startsWith('tenant:')) return false;
  const colon = prefix.indexOf(':', 7);
  return colon < 0 || colon === prefix.length - 1;
}
