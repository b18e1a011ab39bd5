import type { KeyKind } from 'sluice/http';
import { type CatalogueClass, type ClassScope, catalogueClasses } from './class-catalogue.js';
import type { SectionIssue } from './decision-config.js';
import type { ClassConfig, EndpointRule } from './gateway-config.js';
import { resolveCost } from './resolve-cost.js';
import { resolveClassRate } from './resolve-refill.js';

/** Keys of the `ratelimit` section that are settings, not classes. */
const SECTION_SETTINGS = new Set(['max_tracked_keys', 'sweep_interval', 'catalogue']);

/** A class entry as the schema guarantees it: burst required; a rate (`per_minute`, `refill`), key, scope optional. */
interface RawClass {
  readonly per_minute?: number;
  readonly refill?: { readonly tokens?: number; readonly every?: number | string };
  readonly burst?: number;
  readonly concurrent?: number;
  readonly key?: KeyKind;
  readonly scope?: ClassScope;
  readonly cost?: Parameters<typeof resolveCost>[0]['cost'];
  readonly count?: Parameters<typeof resolveCost>[0]['count'];
}

/**
 * Resolves the classes of the `ratelimit` section: every `ratelimit.<class>` entry with its limits, key kind
 * (default `caller`, the gateway's key hierarchy) and scope (default `request`). With `ratelimit.catalogue`, the
 * catalogue's classes take its key kind and scope; a different `key` or `scope` for one of them is refused (the
 * catalogue's table is what operators and tests read), and every catalogue class without limits is reported at the
 * catalogue line, because the design's start check wants limits for the whole catalogue, used or not.
 *
 * @param section - the `ratelimit` section, schema-valid (or `undefined`).
 * @returns the classes with limits, and the issues found.
 */
export function resolveClasses(section: Readonly<Record<string, unknown>> | undefined): {
  classes: Record<string, ClassConfig>;
  issues: SectionIssue[];
} {
  const issues: SectionIssue[] = [];
  // No prototype: `classes[name]` of a name such as `constructor` is a class only when the file defines one.
  const classes: Record<string, ClassConfig> = Object.create(null);
  const raw = section ?? {};
  const catalogueName = typeof raw.catalogue === 'string' ? raw.catalogue : undefined;
  const catalogue = new Map<string, CatalogueClass>();
  for (const c of (catalogueName === undefined ? undefined : catalogueClasses(catalogueName)) ?? [])
    catalogue.set(c.name, c);
  for (const [name, value] of Object.entries(raw)) {
    if (SECTION_SETTINGS.has(name)) continue;
    const c = value as RawClass;
    const fixed = catalogue.get(name);
    if (fixed !== undefined) {
      if (c.key !== undefined && c.key !== fixed.key)
        issues.push({
          path: ['ratelimit', name, 'key'],
          message: `class "${name}" is keyed by ${fixed.key} in catalogue "${catalogueName}"; name a class of your own for another key kind`,
        });
      if (c.scope !== undefined && c.scope !== fixed.scope)
        issues.push({
          path: ['ratelimit', name, 'scope'],
          message: `class "${name}" has scope ${fixed.scope} in catalogue "${catalogueName}"; name a class of your own for another scope`,
        });
    }
    if (c.concurrent !== undefined) {
      classes[name] = concurrencyClass(name, c, fixed?.key ?? c.key ?? 'caller', issues);
      continue;
    }
    if (c.burst === undefined)
      issues.push({ path: ['ratelimit', name], message: 'missing required key "burst"' });
    classes[name] = Object.freeze({
      name,
      ...resolveClassRate(name, c, issues),
      burst: c.burst ?? 0,
      key: fixed?.key ?? c.key ?? 'caller',
      scope: fixed?.scope ?? c.scope ?? 'request',
      ...resolveCost(c, ['ratelimit', name], issues, c.burst),
    });
  }
  for (const name of catalogue.keys()) {
    if (classes[name] === undefined)
      issues.push({
        path: ['ratelimit', 'catalogue'],
        message: `class "${name}" of catalogue "${catalogueName}" has no limits: add ratelimit.${name}.per_minute and .burst`,
      });
  }
  return { classes, issues };
}

/** Keys of a class that describe a rate, which a count of requests in flight does not have. */
const RATE_KEYS = ['per_minute', 'refill', 'burst', 'cost', 'count'] as const;

/**
 * A class that counts requests in flight (`concurrent`): endpoint rules naming it count their requests in flight
 * per key of the class's kind. A rate key beside `concurrent` is refused at its key, and so is scope `connection`
 * (a connection is not a request in flight).
 */
function concurrencyClass(name: string, c: RawClass, key: KeyKind, issues: SectionIssue[]): ClassConfig {
  for (const k of RATE_KEYS) {
    if (c[k] !== undefined)
      issues.push({
        path: ['ratelimit', name, k],
        message: `"${k}" cannot be combined with "concurrent": a count of requests in flight has no rate; name a class of its own for the rate`,
      });
  }
  if (c.scope === 'connection')
    issues.push({
      path: ['ratelimit', name, 'scope'],
      message: 'a class counting requests in flight is taken per request: remove scope: connection',
    });
  return Object.freeze({
    name,
    perMinute: 0,
    burst: 0,
    key,
    scope: 'request',
    concurrent: c.concurrent,
  });
}

/**
 * The references to connection-scoped classes that HTTP admission cannot honour: an endpoint rule (an HTTP route)
 * or the public-auth class naming one. Such a class is taken once per gateway connection; spending it per request
 * would deny connections for request traffic, so the start fails instead.
 *
 * @param endpoints - the resolved endpoint rules.
 * @param publicAuthClass - `identity.publicAuthClass` when given.
 * @param classes - the resolved classes.
 * @returns one issue per reference, pointing at its `class` (or `publicAuthClass`) value.
 */
export function connectionScopeIssues(
  endpoints: readonly EndpointRule[],
  publicAuthClass: string | undefined,
  classes: Readonly<Record<string, ClassConfig>>,
): SectionIssue[] {
  const issues: SectionIssue[] = [];
  const connectionScoped = (name: string | undefined): name is string =>
    name !== undefined && classes[name]?.scope === 'connection';
  const message = (name: string, what: string) =>
    `class "${name}" is connection-scoped (one bucket per gateway connection, taken when the connection is set up): ${what}`;
  for (const rule of endpoints) {
    if (connectionScoped(rule.className))
      issues.push({
        path: ['rateLimiting', 'endpoints', rule.index, 'class'],
        message: message(rule.className, 'an endpoint rule limits HTTP requests and cannot name it'),
      });
  }
  if (connectionScoped(publicAuthClass))
    issues.push({
      path: ['identity', 'publicAuthClass'],
      message: message(publicAuthClass, 'failed credentials are counted per HTTP request and cannot use it'),
    });
  if (publicAuthClass !== undefined && classes[publicAuthClass]?.concurrent !== undefined)
    issues.push({
      path: ['identity', 'publicAuthClass'],
      message: `class "${publicAuthClass}" counts requests in flight: failed credentials need a rate class`,
    });
  return issues;
}
