import { addressListIssues } from './address-list.js';
import { DEFAULT_LISTENER_MAX_CONNECTIONS, type SectionIssue } from './decision-config.js';
import type { ConfigPath } from './violation.js';

/** The units of Envoy's `RateLimitResponse.RateLimit.Unit`, as written in the configuration. */
export type EnvoyUnit = 'second' | 'minute' | 'hour' | 'day' | 'month' | 'year';

/**
 * Seconds per unit. Month and year are fixed lengths (30 and 365 days), as in envoyproxy/ratelimit, so a window
 * never depends on the calendar.
 */
export const UNIT_SECONDS: Readonly<Record<EnvoyUnit, number>> = Object.freeze({
  second: 1,
  minute: 60,
  hour: 3600,
  day: 86_400,
  month: 2_592_000,
  year: 31_536_000,
});

/** The limit of one descriptor node: a token bucket, or unlimited. */
export interface EnvoyRateLimit {
  /** Policy name in headers, metrics and `current_limit.name`. */
  readonly name: string;
  readonly unlimited: boolean;
  /** Tokens per unit (0 when unlimited). */
  readonly requestsPerUnit: number;
  readonly unit: EnvoyUnit;
  /** Bucket capacity; default `requestsPerUnit`. */
  readonly burst: number;
  /** The `ratelimit.<class>` the limits come from, when the node names one. */
  readonly className: string | undefined;
}

/** One node of a domain's descriptor tree. */
export interface EnvoyDescriptorNode {
  readonly key: string;
  /** The value matched exactly; a trailing `*` matches a prefix; `undefined` matches any value. */
  readonly value: string | undefined;
  readonly rateLimit: EnvoyRateLimit | undefined;
  /** Decide and report, never deny. */
  readonly shadowMode: boolean;
  readonly descriptors: readonly EnvoyDescriptorNode[];
}

/** One domain: the namespace an Envoy rate-limit filter names in its requests. */
export interface EnvoyDomain {
  readonly domain: string;
  readonly descriptors: readonly EnvoyDescriptorNode[];
}

/** The resolved `envoy:` section: the Envoy rate limit service (gRPC) and its descriptor configuration. */
export interface EnvoyConfig {
  /** Listen address; default 127.0.0.1. */
  readonly host: string;
  /** Listen port; default 8081; 0 picks a free port. */
  readonly port: number;
  /**
   * Peers allowed to connect (CIDRs, addresses, `loopback`...), as `decision.allowedPeers`: a connection from
   * another is closed before it is read. Default `[loopback]`.
   */
  readonly allowedPeers: readonly string[];
  /** Connections held at once; further ones are closed as they are accepted. Default 4096; `0` is no cap. */
  readonly maxConnections: number;
  /** Every answer is OK whatever the buckets say (they are still spent and reported). Default false. */
  readonly shadowMode: boolean;
  /** Descriptors accepted per request; more is INVALID_ARGUMENT. Default 64. */
  readonly maxDescriptors: number;
  /**
   * Descriptor keys whose values are request paths, matched and counted in the canonical form the proxy uses
   * (case folded, query dropped). Default `path` and `:path`; empty matches every value as sent.
   */
  readonly canonicalPathKeys: readonly string[];
  readonly domains: readonly EnvoyDomain[];
}

/** A resolved `ratelimit.<class>` entry (the gateway's `ClassConfig`, restated so the two modules stay acyclic). */
export interface EnvoyClassLimits {
  readonly name: string;
  readonly perMinute: number;
  readonly burst: number;
}

// biome-ignore lint/suspicious/noExplicitAny: schema-validated YAML data, read field by field below
type Raw = Record<string, any>;

const PRINTABLE_NAME = /^[\x21-\x7e][\x20-\x7e]*$/;

/** The descriptor keys Envoy's filters put request paths under: `path` by convention, `:path` the pseudo-header. */
const DEFAULT_PATH_KEYS = ['path', ':path'];

/**
 * Resolves the schema-valid `envoy:` section, in the shape of envoyproxy/ratelimit's configuration (`domain`,
 * nested `descriptors` with `key`, optional `value`, `rate_limit` with `requests_per_unit` and `unit` or
 * `unlimited`, `shadow_mode`), plus Sluice's `burst`, `name` and `class`. Checks what the schema cannot: unique
 * domains, unique key and value per level, a limit or a class (not both), known classes, policy names that fit a
 * header.
 *
 * @param raw - the section as parsed, or `undefined` when the file has none (then the service is off).
 * @param classes - the resolved `ratelimit.<class>` entries.
 * @returns the frozen configuration (`undefined` when absent or invalid) and every issue found.
 */
export function resolveEnvoyConfig(
  raw: Raw | undefined,
  classes: Readonly<Record<string, EnvoyClassLimits>>,
): { config: EnvoyConfig | undefined; issues: SectionIssue[] } {
  const issues: SectionIssue[] = [];
  if (raw === undefined) return { config: undefined, issues };
  const names = new Map<string, string>();
  const seenDomains = new Set<string>();
  const domains: EnvoyDomain[] = [];
  (raw.domains ?? []).forEach((d: Raw, i: number) => {
    const path: ConfigPath = ['envoy', 'domains', i];
    if (seenDomains.has(d.domain)) {
      issues.push({ path: [...path, 'domain'], message: `domain "${d.domain}" is configured twice` });
    }
    seenDomains.add(d.domain);
    const ctx: Ctx = { domain: d.domain, classes, names, issues };
    domains.push(
      Object.freeze({
        domain: d.domain,
        descriptors: nodes(d.descriptors ?? [], [...path, 'descriptors'], [], ctx),
      }),
    );
  });
  const allowedPeers: string[] = raw.allowedPeers ?? ['loopback'];
  issues.push(...addressListIssues(['envoy', 'allowedPeers'], allowedPeers));
  const config: EnvoyConfig = Object.freeze({
    host: raw.host ?? '127.0.0.1',
    port: raw.port ?? 8081,
    allowedPeers: Object.freeze([...allowedPeers]),
    maxConnections: raw.maxConnections ?? DEFAULT_LISTENER_MAX_CONNECTIONS,
    shadowMode: raw.shadowMode === true,
    maxDescriptors: raw.maxDescriptors ?? 64,
    canonicalPathKeys: Object.freeze([...(raw.canonicalPathKeys ?? DEFAULT_PATH_KEYS)]),
    domains: Object.freeze(domains),
  });
  return { config: issues.length === 0 ? config : undefined, issues };
}

interface Ctx {
  readonly domain: string;
  readonly classes: Readonly<Record<string, EnvoyClassLimits>>;
  /** Policy name to the node path that defined it, so two limits never share a name by accident. */
  readonly names: Map<string, string>;
  readonly issues: SectionIssue[];
}

function nodes(list: Raw[], path: ConfigPath, parents: string[], ctx: Ctx): readonly EnvoyDescriptorNode[] {
  const seen = new Set<string>();
  const out: EnvoyDescriptorNode[] = [];
  list.forEach((n, i) => {
    const here: ConfigPath = [...path, i];
    const id = `${n.key}\u0000${n.value ?? ''}\u0000${n.value === undefined ? 'any' : 'one'}`;
    if (seen.has(id)) {
      ctx.issues.push({
        path: [...here, 'key'],
        message: `key "${n.key}"${n.value === undefined ? '' : ` with value "${n.value}"`} appears twice at this level`,
      });
    }
    seen.add(id);
    if (
      typeof n.value === 'string' &&
      n.value.indexOf('*') >= 0 &&
      n.value.indexOf('*') !== n.value.length - 1
    ) {
      ctx.issues.push({
        path: [...here, 'value'],
        message: `a "*" is only allowed at the end of a value (a prefix match), got ${JSON.stringify(n.value)}`,
      });
    }
    const segment = n.value === undefined ? n.key : `${n.key}_${n.value}`;
    const segments = [...parents, segment];
    out.push(
      Object.freeze({
        key: n.key,
        value: n.value,
        rateLimit: rateLimitOf(n, here, segments, ctx),
        shadowMode: n.shadow_mode === true,
        descriptors: nodes(n.descriptors ?? [], [...here, 'descriptors'], segments, ctx),
      }),
    );
  });
  return Object.freeze(out);
}

function rateLimitOf(n: Raw, here: ConfigPath, segments: string[], ctx: Ctx): EnvoyRateLimit | undefined {
  const r = n.rate_limit as Raw | undefined;
  if (n.class !== undefined) {
    if (r !== undefined) {
      ctx.issues.push({
        path: [...here, 'class'],
        message: '"class" cannot be combined with "rate_limit": the class sets the limits',
      });
      return undefined;
    }
    if (n.shadow_mode === true) {
      ctx.issues.push({
        path: [...here, 'shadow_mode'],
        message:
          'a class is shared with enforcing rules, so it cannot be a shadow here; give this node its own rate_limit',
      });
    }
    const c = ctx.classes[n.class];
    if (c === undefined) {
      ctx.issues.push({
        path: [...here, 'class'],
        message: `class "${n.class}" is not configured: add ratelimit.${n.class}.per_minute and .burst`,
      });
      return undefined;
    }
    const owner = ctx.names.get(c.name);
    if (owner !== undefined && owner !== `class ${c.name}`) {
      ctx.issues.push({
        path: [...here, 'class'],
        message: `policy name "${c.name}" is already used by ${owner}; rename that limit`,
      });
    }
    ctx.names.set(c.name, `class ${c.name}`);
    // A class is one policy wherever it is named, as for endpoint rules: one bucket per class and key.
    return Object.freeze({
      name: c.name,
      unlimited: false,
      requestsPerUnit: c.perMinute,
      unit: 'minute',
      burst: c.burst,
      className: c.name,
    });
  }
  if (r === undefined) return undefined;
  const name: string = r.name ?? `${ctx.domain}.${segments.join('.')}`;
  const where = `envoy ${ctx.domain} ${segments.join('.')}`;
  if (!PRINTABLE_NAME.test(name) || /[{}"]/.test(name)) {
    ctx.issues.push({
      path: [...here, 'rate_limit', ...(r.name === undefined ? [] : ['name'])],
      message: `policy name ${JSON.stringify(name)} must be printable ASCII without braces or quotes (it is sent in RateLimit headers); set rate_limit.name`,
    });
  }
  const earlier = ctx.names.get(name);
  if (earlier !== undefined) {
    ctx.issues.push({
      path: [...here, 'rate_limit', 'name'],
      message: `policy name "${name}" is already used by ${earlier}; give this limit a distinct name`,
    });
  }
  ctx.names.set(name, where);
  if (r.unlimited === true) {
    if (r.requests_per_unit !== undefined || r.unit !== undefined || r.burst !== undefined) {
      ctx.issues.push({
        path: [...here, 'rate_limit', 'unlimited'],
        message: 'an unlimited rate_limit takes no requests_per_unit, unit or burst',
      });
    }
    return Object.freeze({
      name,
      unlimited: true,
      requestsPerUnit: 0,
      unit: 'second',
      burst: 0,
      className: undefined,
    });
  }
  if (r.requests_per_unit === undefined || r.unit === undefined) {
    ctx.issues.push({
      path: [...here, 'rate_limit'],
      message: 'needs requests_per_unit and unit (or unlimited: true)',
    });
    return undefined;
  }
  return Object.freeze({
    name,
    unlimited: false,
    requestsPerUnit: r.requests_per_unit,
    unit: r.unit,
    burst: r.burst ?? r.requests_per_unit,
    className: undefined,
  });
}
