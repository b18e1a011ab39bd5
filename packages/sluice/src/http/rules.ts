import {
  integerOption,
  invalidOption,
  type Limiter,
  objectOption,
  type Policy,
  rejectUnknownKeys,
} from '../core/index.js';
import { type CostSettlement, compileSettlement, type SettleOptions } from './cost-settlement.js';
import { CountFilter, type CountOption } from './count-filter.js';
import { compileKey, type KeyDeriver, type KeySpec } from './keys.js';
import {
  compilePathPattern,
  type EndpointPattern,
  endpoint,
  hasMethod,
  parseMethods,
} from './path-pattern.js';
import type { HttpRequestInfo, Identity } from './types.js';

/**
 * Which policies apply to which requests, and how their buckets are keyed. A rule matches a request when every
 * condition it names holds (`path` and `methods`, `operation`); a rule naming none matches every request that is
 * not exempt. Every matching rule applies, in the order given, so a global tier policy and an endpoint policy
 * are decided together, all or nothing; when two matching rules name the same policy, the first one keys it.
 */
export interface RuleOptions {
  /** A label for errors and docs. */
  readonly name?: string;
  /**
   * A path pattern (`/api/risk/simulation/*`, `/hooks/:webhook_id`); a last `*` matches its prefix too (`/api/*`
   * matches `/api`). See "Rules and path patterns" in the sluice/http README (`src/http/README.md`).
   */
  readonly path?: string;
  /** Methods (`POST`, `['PUT', 'PATCH']`, `'GET,POST'`); absent means any. `GET` also matches `HEAD`. */
  readonly methods?: string | readonly string[];
  /** Operation classes (`rl.write`); matches requests whose `operation` is one of them. */
  readonly operation?: string | readonly string[];
  /** Tiers (`free`, `['standard', 'enterprise']`); matches requests whose `identity.tier` is one of them. */
  readonly tier?: string | readonly string[];
  /** Names of policies of the limiter, decided together. */
  readonly policies: readonly string[];
  /** How to key the buckets; default `ip`. */
  readonly key?: KeySpec;
  /** Whole tokens per request, or a function of the request; default 1. The request's own `cost` wins. */
  readonly cost?: number | ((request: HttpRequestInfo) => number);
  /**
   * The `code` of the 429 problem when a policy this rule keys denies, instead of `rate_limited`: for clients
   * that already know another code for the same limit (the Policy Engine's `ERR_POL_007`). Letters, digits and
   * `_.:-`, at most 64.
   */
  readonly problemCode?: string;
  /**
   * The order in which a queueing policy admits waiting requests. Only `fifo` (the default): the engine gives
   * each waiting request its own place in the bucket's debt as it arrives, so a later arrival can never be
   * served first.
   */
  readonly queueOrder?: 'fifo';
  /**
   * A cost known only when the response ends (an upstream header, bytes, a JSON field such as the tokens a model
   * spent), settled with the rule's policies then: see {@link SettleOptions}.
   */
  readonly settle?: SettleOptions;
  /**
   * Which responses count against the rule's policies: `failed` (400 and above), `successful` (below 400) or
   * statuses and ranges. The token is taken at admission and given back when the response does not count.
   */
  readonly count?: CountOption;
}

/** A rule compiled once: matchers, policies and key deriver. */
export interface CompiledRule {
  readonly name: string;
  readonly endpoint: EndpointPattern | undefined;
  readonly methods: ReadonlySet<string> | undefined;
  readonly operations: ReadonlySet<string> | undefined;
  readonly tiers: ReadonlySet<string> | undefined;
  readonly policies: readonly Policy[];
  readonly key: KeyDeriver;
  readonly cost: number | ((request: HttpRequestInfo) => number);
  /** The 429 problem `code` of the policies this rule keys; `undefined` for `rate_limited`. */
  readonly problemCode: string | undefined;
  /** True when the rule's path pattern captures parameters. */
  readonly captures: boolean;
  /** The cost settled from the response, or `undefined`. */
  readonly settle: CostSettlement | undefined;
  /** Which responses count, or `undefined` for all. */
  readonly count: CountFilter | undefined;
  /** True when method, path, operation and tier conditions hold; `identity` defaults to the request's. */
  match(request: HttpRequestInfo, identity?: Identity): boolean;
}

const KNOWN = [
  'name',
  'path',
  'methods',
  'operation',
  'tier',
  'policies',
  'key',
  'cost',
  'problemCode',
  'queueOrder',
  'settle',
  'count',
];
const PROBLEM_CODE = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * Validates and compiles one rule.
 *
 * @param options - the rule.
 * @param limiter - the engine limiter whose policies the rule names.
 * @param path - the option path for errors, for example `rules[2]`.
 * @throws SluiceError `ERR_INVALID_OPTION` for an invalid field, `ERR_UNKNOWN_POLICY` for a policy the limiter
 * does not have.
 */
export function compileRule(options: RuleOptions, limiter: Limiter, path: string): CompiledRule {
  const o = objectOption(path, options);
  rejectUnknownKeys(path, o, KNOWN);
  const name = o.name === undefined ? path : String(o.name);
  if (!Array.isArray(o.policies) || o.policies.length === 0) {
    throw invalidOption(`${path}.policies`, 'a non-empty array of policy names', o.policies);
  }
  const policies = o.policies.map((n: unknown, i: number) => {
    if (typeof n !== 'string') throw invalidOption(`${path}.policies[${i}]`, 'a policy name', n);
    return limiter.policy(n);
  });
  const methods = o.methods === undefined ? undefined : parseMethods(o.methods as string, `${path}.methods`);
  const ep =
    o.path === undefined
      ? undefined
      : endpoint(methods ?? [], compilePathPattern(o.path as string, `${path}.path`));
  const methodSet = ep === undefined && methods !== undefined ? withHead(methods) : undefined;
  const operations = nameSet(
    o.operation,
    `${path}.operation`,
    'an operation class or a non-empty array of them',
  );
  const tiers = nameSet(o.tier, `${path}.tier`, 'a tier name or a non-empty array of them');
  let cost: number | ((request: HttpRequestInfo) => number) = 1;
  if (typeof o.cost === 'function') cost = o.cost as (request: HttpRequestInfo) => number;
  else cost = integerOption(`${path}.cost`, o.cost, 1, Number.MAX_SAFE_INTEGER, 1);
  const key = compileKey((o.key ?? 'ip') as KeySpec, `${path}.key`);
  if (
    o.problemCode !== undefined &&
    (typeof o.problemCode !== 'string' || !PROBLEM_CODE.test(o.problemCode))
  ) {
    throw invalidOption(
      `${path}.problemCode`,
      'letters, digits and _.:- (1 to 64), for example ERR_POL_007',
      o.problemCode,
    );
  }
  if (o.queueOrder !== undefined && o.queueOrder !== 'fifo') {
    throw invalidOption(
      `${path}.queueOrder`,
      '"fifo" (waiting requests hold places in the bucket in arrival order; no other order is possible)',
      o.queueOrder,
    );
  }
  const match = (req: HttpRequestInfo, identity: Identity | undefined = req.identity): boolean => {
    if (operations !== undefined && (req.operation === undefined || !operations.has(req.operation)))
      return false;
    if (tiers !== undefined) {
      const tier = identity?.tier;
      if (typeof tier !== 'string' || !tiers.has(tier)) return false;
    }
    if (ep !== undefined) return ep.match(req.method, req.path);
    if (methodSet !== undefined) return hasMethod(methodSet, req.method);
    return true;
  };
  return Object.freeze({
    name,
    endpoint: ep,
    methods: methodSet,
    operations,
    tiers,
    policies: Object.freeze(policies),
    key,
    cost,
    problemCode: o.problemCode as string | undefined,
    captures: ep !== undefined && ep.pattern.params.length > 0,
    settle: o.settle === undefined ? undefined : compileSettlement(o.settle, `${path}.settle`),
    count: o.count === undefined ? undefined : new CountFilter(o.count, `${path}.count`),
    match,
  });
}

/** A non-empty list of non-empty names (or one name) as a set; `undefined` when absent. */
function nameSet(value: unknown, option: string, expected: string): Set<string> | undefined {
  if (value === undefined) return undefined;
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length === 0 || list.some((x) => typeof x !== 'string' || x === '')) {
    throw invalidOption(option, expected, value);
  }
  return new Set(list as string[]);
}

function withHead(methods: readonly string[]): Set<string> {
  const s = new Set(methods);
  if (s.has('GET')) s.add('HEAD');
  return s;
}
