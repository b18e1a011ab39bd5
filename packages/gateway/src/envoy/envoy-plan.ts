import { definePolicy, type Policy } from 'sluice';
import { boundKey, compileTargetCanonicalizer } from 'sluice/http';
import {
  type EnvoyConfig,
  type EnvoyDescriptorNode,
  type EnvoyRateLimit,
  type EnvoyUnit,
  UNIT_SECONDS,
} from '../config/envoy-config.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { type OverrideSizes, overrideSizes } from './override-sizes.js';
import { OverrideTable } from './override-table.js';

/** A descriptor node with its policy built. */
export interface CompiledNode {
  /** The policy of the node's limit; `undefined` when the node has none or is unlimited. */
  readonly policy: Policy | undefined;
  readonly limit: EnvoyRateLimit | undefined;
  /** The node's `shadow_mode`: its limit, configured or overridden, is decided and reported but never denies. */
  readonly shadow: boolean;
  readonly children: CompiledLevel;
}

/** One level of a descriptor tree: exact matches first, then prefix matches (longest first), then any value. */
export interface CompiledLevel {
  /** `key\0value` to node. */
  readonly exact: ReadonlyMap<string, CompiledNode>;
  /** Per key, prefix matches sorted longest first. */
  readonly prefixes: ReadonlyMap<string, readonly { readonly prefix: string; readonly node: CompiledNode }[]>;
  /** `key` to the node matching any value. */
  readonly any: ReadonlyMap<string, CompiledNode>;
}

/** One entry of a request descriptor. */
export interface DescriptorEntry {
  readonly key: string;
  readonly value: string;
}

/** What {@link EnvoyPlan.overridePolicy} reports, besides the policy. */
export interface OverrideEvents {
  /** The override's place in the request, for messages (`descriptors[2].limit`); default `limit`. */
  readonly field?: string;
  /** Called once per distinct override whose sizes are not the ones sent, when it is defined. */
  readonly onAdjusted?: (sizes: OverrideSizes, policy: Policy) => void;
  /** Called when this override's arrival evicted the least recently used one, with the running count. */
  readonly onEvicted?: (evicted: Policy, evictions: number) => void;
}

/**
 * Override policies held at once; past it the least recently used is evicted (see {@link OverrideTable}). An
 * override's identity is its limit's name, shadow flag and sizes, so the number of distinct ones is bounded by the
 * override counts Envoy sends, not by descriptor keys or values.
 */
export const MAX_OVERRIDES = 1024;
/** Bucket keys longer than this are hashed (their `envoy:` prefix kept), like every other key of the gateway. */
const MAX_KEY_LENGTH = 200;
/**
 * The reading of a path that the configured canonical form refuses (an encoded slash, a `;` parameter): the one
 * that makes the most separators and dot segments of it, as the upstream that decodes most would route it.
 */
const WIDEST = compileTargetCanonicalizer({ encodedSlashes: 'decode', pathParameters: 'strip' });

/**
 * The Envoy descriptor configuration of one gateway configuration, compiled: a lookup tree per domain and one
 * policy per limit, built once. A reload builds a new plan reusing the policies of the previous one whose limits
 * did not change, because the memory store files buckets by policy object: that is how buckets survive a reload.
 */
export class EnvoyPlan {
  readonly config: EnvoyConfig;
  /** The configuration this plan was built from (compared by identity to detect a reload). */
  readonly source: GatewayConfig;
  readonly #domains = new Map<string, CompiledLevel>();
  readonly #policies = new Map<string, Policy>();
  readonly #overrides: OverrideTable;
  readonly #prefix: string;
  readonly #pathKeys: ReadonlySet<string>;
  readonly #canonical: ReturnType<typeof compileTargetCanonicalizer>;

  /**
   * @param source - the gateway configuration; its `envoy` section must be present.
   * @param previous - the plan being replaced, whose unchanged policies are reused.
   */
  constructor(source: GatewayConfig, previous?: EnvoyPlan) {
    const config = source.envoy;
    if (config === undefined) throw new Error('EnvoyPlan needs an envoy section');
    this.config = config;
    this.source = source;
    this.#prefix = source.keys.prefix;
    this.#pathKeys = new Set(config.canonicalPathKeys);
    this.#canonical = compileTargetCanonicalizer(source.target, 'target');
    // Overrides carry over a reload: their identity does not depend on the configuration's sizes.
    this.#overrides = previous === undefined ? new OverrideTable(MAX_OVERRIDES) : previous.#overrides;
    for (const d of config.domains) this.#domains.set(d.domain, this.#level(d.descriptors, previous));
  }

  /**
   * The value a descriptor entry is matched and counted by. For a key of `envoy.canonicalPathKeys` (default
   * `path` and `:path`) it is the canonical path the proxy and the decision API match endpoint rules on (dot
   * segments resolved, repeated slashes collapsed, unreserved characters decoded, `target:` applied), without the
   * query and ASCII lower case, so every spelling of one path takes from one bucket. A path the canonical form
   * refuses is read with encoded slashes decoded and `;` parameters stripped; a value that is no path at all (no
   * leading `/`) is kept as sent. Other keys are matched as sent, as envoyproxy/ratelimit does.
   */
  entryValue(key: string, value: string): string {
    if (!this.#pathKeys.has(key)) return value;
    let r = this.#canonical(value);
    if (!r.ok) r = WIDEST(value);
    return r.ok ? asciiLower(r.path) : value;
  }

  /** True when requests of this domain have any configuration. */
  hasDomain(domain: string): boolean {
    return this.#domains.has(domain);
  }

  /**
   * The node whose limit applies to a descriptor, in envoyproxy/ratelimit's way: walk the tree entry by entry
   * (an exact value first, then the longest matching prefix, then the node for any value); the limit applies only
   * when the walk reaches the last entry.
   *
   * @returns the node, or `undefined` when no limit applies.
   */
  match(domain: string, entries: readonly DescriptorEntry[]): CompiledNode | undefined {
    let level = this.#domains.get(domain);
    let node: CompiledNode | undefined;
    for (let i = 0; i < entries.length; i++) {
      if (level === undefined) return undefined;
      const e = entries[i];
      node = level.exact.get(`${e.key}\u0000${e.value}`);
      if (node === undefined) {
        const list = level.prefixes.get(e.key);
        if (list !== undefined) {
          for (const p of list) {
            if (e.value.startsWith(p.prefix)) {
              node = p.node;
              break;
            }
          }
        }
      }
      node ??= level.any.get(e.key);
      if (node === undefined) return undefined;
      level = node.children;
    }
    return node;
  }

  /**
   * The policy of a limit override sent by Envoy for a descriptor. It is named after the limit it replaces (the
   * matched node's `rate_limit` name), or `<domain>.override` when the descriptor has none (`envoy.override` for
   * a domain the configuration does not name), never after the descriptor's entries, and it keeps the node's
   * `shadow_mode`. Equal overrides share one policy object; their buckets are told apart by the bucket key,
   * which holds every entry. An override Sluice cannot hold exactly is applied as the nearest it can, on the
   * strict side (see {@link overrideSizes}). The table of overrides is bounded and evicts the least recently
   * used one, so an override is never dropped.
   *
   * @param domain - the request's domain.
   * @param node - the node the descriptor matched ({@link EnvoyPlan.match}), if any.
   * @returns the policy.
   * @throws RateLimitServiceError `invalid_argument` for an unknown unit or a count that is no uint32.
   */
  overridePolicy(
    domain: string,
    node: CompiledNode | undefined,
    requestsPerUnit: number,
    unit: string,
    events: OverrideEvents = {},
  ): Policy {
    const sizes = overrideSizes(requestsPerUnit, unit, events.field ?? 'limit');
    const name = safeName(
      node?.limit?.name ?? (this.#domains.has(domain) ? `${domain}.override` : 'envoy.override'),
    );
    const shadow = node?.shadow ?? false;
    const id = `${name}\u0000${shadow}\u0000${sizes.quota}\u0000${sizes.window}\u0000${sizes.burst}`;
    return this.#overrides.use(
      id,
      () => {
        const p = definePolicy({
          name,
          quota: sizes.quota,
          window: sizes.window,
          burst: sizes.burst,
          shadow,
        });
        if (sizes.adjusted) events.onAdjusted?.(sizes, p);
        return p;
      },
      events.onEvicted,
    );
  }

  /** Override policies evicted from the table since it was made (it carries over reloads). */
  get overrideEvictions(): number {
    return this.#overrides.evictions;
  }

  /**
   * The bucket key of a descriptor: the domain and every entry, so each distinct value has its own bucket, with
   * the configured key prefix. Separators inside keys and values are escaped so no two descriptors share a key.
   */
  bucketKey(domain: string, entries: readonly DescriptorEntry[]): string {
    let k = `${this.#prefix}envoy:${escapePart(domain)}`;
    for (const e of entries) k += `:${escapePart(e.key)}=${escapePart(e.value)}`;
    return boundKey(k, MAX_KEY_LENGTH);
  }

  #level(nodes: readonly EnvoyDescriptorNode[], previous: EnvoyPlan | undefined): CompiledLevel {
    const exact = new Map<string, CompiledNode>();
    const prefixes = new Map<string, { prefix: string; node: CompiledNode }[]>();
    const any = new Map<string, CompiledNode>();
    for (const n of nodes) {
      const compiled: CompiledNode = {
        policy: this.#policy(n, previous),
        limit: n.rateLimit,
        shadow: n.shadowMode,
        children: this.#level(n.descriptors, previous),
      };
      // Values of path keys are compared with requests' canonical paths, which are in lower case.
      const value = n.value !== undefined && this.#pathKeys.has(n.key) ? asciiLower(n.value) : n.value;
      if (value === undefined) any.set(n.key, compiled);
      else if (value.endsWith('*')) {
        const list = prefixes.get(n.key) ?? [];
        list.push({ prefix: value.slice(0, -1), node: compiled });
        list.sort((a, b) => b.prefix.length - a.prefix.length);
        prefixes.set(n.key, list);
      } else exact.set(`${n.key}\u0000${value}`, compiled);
    }
    return { exact, prefixes, any };
  }

  #policy(n: EnvoyDescriptorNode, previous: EnvoyPlan | undefined): Policy | undefined {
    const r = n.rateLimit;
    if (r === undefined || r.unlimited) return undefined;
    const window = UNIT_SECONDS[r.unit as EnvoyUnit];
    const shadow = n.shadowMode;
    // A class named by several nodes is one policy (one bucket per class and key); shadow nodes get their own.
    const id = `${r.name}|${shadow}`;
    const mine = this.#policies.get(id);
    if (mine !== undefined) return mine;
    const old = previous === undefined ? undefined : previous.#policies.get(id);
    const p =
      old !== undefined &&
      old.quota === r.requestsPerUnit &&
      old.window === window &&
      old.burst === r.burst &&
      old.shadow === shadow
        ? old
        : definePolicy({ name: r.name, quota: r.requestsPerUnit, window, burst: r.burst, shadow });
    this.#policies.set(id, p);
    return p;
  }
}

/** ASCII lower case: percent-escapes and other bytes stay as they are (hex case is then folded on both sides). */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

/** A policy name that fits a RateLimit header: printable ASCII without braces or quotes. */
function safeName(name: string): string {
  return name.replace(/[^\x21-\x7e]|[{}"]/g, '_');
}

function escapePart(s: string): string {
  if (s.indexOf('%') < 0 && s.indexOf(':') < 0 && s.indexOf('=') < 0) return s;
  return s.replaceAll('%', '%25').replaceAll(':', '%3A').replaceAll('=', '%3D');
}
