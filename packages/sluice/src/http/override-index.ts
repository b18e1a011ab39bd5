import { invalidOption, type OverrideRule, overridePolicy, type Policy } from '../core/index.js';
import { detached } from './detached-string.js';
import { type IpRange, inRange, parseAddress, parseIpRange } from './ip-address.js';

/** One rule compiled for lookups. */
export interface CompiledOverride {
  readonly rule: OverrideRule;
  readonly effect: OverrideRule['effect'];
  readonly policy: string | undefined;
  readonly tier: string | undefined;
  /** Epoch milliseconds; `Infinity` for a rule without an end. */
  readonly expiresAt: number;
  /** Longer, narrower patterns first; a policy scope before a tier scope before none. */
  readonly rank: number;
  /** The policy replacing a base policy under a `limit` rule (cached per base by `overridePolicy`). */
  policyFor(base: Policy): Policy;
  /** Plans derived under this rule alone, per base plan and mask of the checks it applied to. */
  readonly plans: WeakMap<object, Map<number, object>>;
}

interface TrieNode {
  children: Map<number, TrieNode> | undefined;
  entries: CompiledOverride[] | undefined;
}

/** A pattern's kind and the string it compares. */
export type OverridePatternKind =
  | { readonly kind: 'exact'; readonly value: string }
  | { readonly kind: 'prefix'; readonly value: string }
  | { readonly kind: 'range'; readonly range: IpRange };

/**
 * Reads a pattern: `ip:<address>/<bits>` is an address range (matched against the client IP), `tenant:<t>` every
 * key of that tenant, `<prefix>*` a prefix, anything else an exact bucket key.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` naming `pattern` for a malformed address range.
 */
export function overridePattern(pattern: string): OverridePatternKind {
  if (pattern.startsWith('ip:') && pattern.includes('/')) {
    const range = parseIpRange(pattern.slice(3));
    if (range === undefined) {
      throw invalidOption(
        'pattern',
        'an address range such as ip:203.0.113.0/24 or ip:2001:db8::/48',
        pattern,
      );
    }
    return { kind: 'range', range };
  }
  if (pattern.endsWith('*')) return { kind: 'prefix', value: pattern.slice(0, -1) };
  if (/^tenant:[^:*]+$/.test(pattern)) return { kind: 'prefix', value: `${pattern}:` };
  return { kind: 'exact', value: pattern };
}

const NONE: readonly CompiledOverride[] = Object.freeze([]);
/** Keys (and client IPs) whose candidates are remembered, cleared at the cap so a flood cannot grow it. */
const MEMO_MAX = 8192;

/**
 * The current rules compiled once per change: exact keys in a `Map`, prefixes in a character trie, address
 * ranges in a list. A key's candidates (every rule whose pattern matches it, narrowest first) are remembered, and
 * so are the range rules a client IP falls in (the address is parsed once, not once per range and policy), so a
 * returning key costs a `Map` lookup or two and a short scan, whatever the number of rules.
 */
export class OverrideIndex {
  readonly #exact = new Map<string, CompiledOverride[]>();
  readonly #root: TrieNode = { children: undefined, entries: undefined };
  readonly #ranges: { readonly range: IpRange; readonly entry: CompiledOverride }[] = [];
  readonly #memo = new Map<string, readonly CompiledOverride[]>();
  readonly #byIp = new Map<string, readonly CompiledOverride[]>();
  readonly #hasPrefixes: boolean;

  /**
   * @param rules - the rules of a snapshot (patterns already validated; a malformed stored one is skipped).
   * @param keyPrefix - the limiter's bucket key prefix, put before every key pattern.
   */
  constructor(rules: readonly OverrideRule[], keyPrefix = '') {
    let prefixes = false;
    for (const rule of rules) {
      let p: OverridePatternKind;
      try {
        p = overridePattern(rule.pattern);
      } catch {
        continue;
      }
      const narrow = p.kind === 'exact' ? 1_000_000 : p.kind === 'prefix' ? p.value.length * 4 : 0;
      const entry = compile(rule, narrow + (rule.policy !== undefined ? 2 : rule.tier !== undefined ? 1 : 0));
      if (p.kind === 'range') {
        this.#ranges.push({ range: p.range, entry });
      } else if (p.kind === 'exact') {
        const k = keyPrefix + p.value;
        const list = this.#exact.get(k);
        if (list === undefined) this.#exact.set(k, [entry]);
        else list.push(entry);
      } else {
        prefixes = true;
        this.#insert(keyPrefix + p.value, entry);
      }
    }
    this.#hasPrefixes = prefixes;
    this.#ranges.sort((a, b) => b.entry.rank - a.entry.rank);
  }

  /**
   * The narrowest rule in force for one bucket: its key matches the pattern (or the client IP is in the
   * range), and its scope admits the policy and tier.
   *
   * @param key - the bucket key, with the limiter's prefix.
   * @param policy - the policy's name.
   * @param tier - the caller's tier, if any.
   * @param ip - the client IP, for address ranges.
   * @param clock - epoch milliseconds, read only when some rule matches: a rule past its end is skipped.
   */
  find(
    key: string,
    policy: string,
    tier: string | undefined,
    ip: string | undefined,
    clock: () => number,
  ): CompiledOverride | undefined {
    let list = this.#memo.get(key);
    if (list === undefined) {
      list = this.#candidates(key);
      if (this.#memo.size >= MEMO_MAX) this.#memo.clear();
      this.#memo.set(detached(key), list);
    }
    const ranges = this.#ranges;
    if (list.length === 0 && (ranges.length === 0 || ip === undefined)) return undefined;
    const nowMs = clock();
    for (let i = 0; i < list.length; i++) {
      const e = list[i];
      if (admits(e, policy, tier, nowMs)) return e;
    }
    if (ip === undefined || ranges.length === 0) return undefined;
    const inside = this.#rangesOf(ip);
    for (let i = 0; i < inside.length; i++) {
      const e = inside[i];
      if (admits(e, policy, tier, nowMs)) return e;
    }
    return undefined;
  }

  /** The range rules an address is in, narrowest first. */
  #rangesOf(ip: string): readonly CompiledOverride[] {
    let list = this.#byIp.get(ip);
    if (list === undefined) {
      const address = parseAddress(ip);
      const out: CompiledOverride[] = [];
      if (address !== undefined) {
        for (const r of this.#ranges) if (inRange(address, r.range)) out.push(r.entry);
      }
      list = out.length === 0 ? NONE : out;
      if (this.#byIp.size >= MEMO_MAX) this.#byIp.clear();
      this.#byIp.set(detached(ip), list);
    }
    return list;
  }

  #candidates(key: string): readonly CompiledOverride[] {
    const exact = this.#exact.get(key);
    let out: CompiledOverride[] | undefined = exact === undefined ? undefined : [...exact];
    if (this.#hasPrefixes) {
      let node: TrieNode | undefined = this.#root;
      for (let i = 0; node !== undefined; i++) {
        if (node.entries !== undefined) {
          if (out === undefined) out = [...node.entries];
          else out.push(...node.entries);
        }
        if (i >= key.length || node.children === undefined) break;
        node = node.children.get(key.charCodeAt(i));
      }
    }
    if (out === undefined) return NONE;
    return out.sort((a, b) => b.rank - a.rank);
  }

  #insert(prefix: string, entry: CompiledOverride): void {
    let node = this.#root;
    for (let i = 0; i < prefix.length; i++) {
      node.children ??= new Map();
      const c = prefix.charCodeAt(i);
      let next = node.children.get(c);
      if (next === undefined) {
        next = { children: undefined, entries: undefined };
        node.children.set(c, next);
      }
      node = next;
    }
    if (node.entries === undefined) node.entries = [entry];
    else node.entries.push(entry);
  }
}

function admits(e: CompiledOverride, policy: string, tier: string | undefined, nowMs: number): boolean {
  return (
    e.expiresAt > nowMs &&
    (e.policy === undefined || e.policy === policy) &&
    (e.tier === undefined || e.tier === tier)
  );
}

function compile(rule: OverrideRule, rank: number): CompiledOverride {
  const sizes =
    rule.effect === 'limit'
      ? { quota: rule.quota as number, window: rule.window as number, burst: rule.burst as number }
      : undefined;
  return {
    rule,
    effect: rule.effect,
    policy: rule.policy,
    tier: rule.tier,
    expiresAt: rule.expiresAt ?? Number.POSITIVE_INFINITY,
    rank,
    policyFor: (base) => (sizes === undefined ? base : overridePolicy(base, sizes)),
    plans: new WeakMap(),
  };
}
