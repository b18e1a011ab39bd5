import { compilePathPattern } from 'sluice/http';
import { durationMs } from './duration.js';
import { closestName } from './suggest.js';
import { checkUrl } from './value-ranges.js';
import type { ConfigPath } from './violation.js';

/** One endpoint category of quota usage: requests of the named endpoint rules or matching the patterns. */
export interface QuotaCategoryConfig {
  readonly name: string;
  /** Names of `rateLimiting.endpoints` rules (their `name`, class or pattern) whose requests fall in this category. */
  readonly rules: readonly string[];
  /** Path patterns (same syntax as endpoint rules) whose requests fall in this category. */
  readonly patterns: readonly string[];
}

/** The resolved `quota:` section: tenant quota tracking by tenant, endpoint category and time bucket. */
export interface QuotaConfig {
  /** Where usage lives: `redis` reuses the store's Redis connection; default the store's type. */
  readonly storage: 'memory' | 'redis';
  /** Prefix of the quota keys in Redis (`key_prefix` in the configuration file); default `<keys.prefix>quota:` or `sluice:quota:`. */
  readonly keyPrefix: string;
  /** The rolling window in seconds (`ttl` in the configuration file); default 3600. */
  readonly windowSeconds: number;
  /** Size of a time bucket in seconds; divides the window; default 60. */
  readonly bucketSeconds: number;
  /** Milliseconds between flushes of the counts to the store; default 1000. */
  readonly flushIntervalMs: number;
  /** Categories in order: the first that matches a request names its category. */
  readonly categories: readonly QuotaCategoryConfig[];
  /** The category of requests no category matches; default `other`. */
  readonly defaultCategory: string;
  /** Quotas over the window of named tenants. */
  readonly tenantLimits: Readonly<Record<string, number>>;
  /**
   * Quota of tenants not named; `undefined` takes the hourly limit of the tenant's tier (`requestsPerHour`
   * scaled to the window), and a tier without one gives no quota (tracked, no alert).
   */
  readonly defaultLimit: number | undefined;
  /** Ratios of the quota that raise an alert, ascending; default [0.8, 1]. */
  readonly thresholds: readonly number[];
  /** Optional signed webhook for alerts. */
  readonly webhook:
    | { readonly url: string; readonly secret: string; readonly headerPrefix: string }
    | undefined;
}

/** A problem in the `quota:` section, with its path from the file's root. */
export interface QuotaIssue {
  readonly path: ConfigPath;
  readonly message: string;
}

/** What the rest of the configuration says that the quota section depends on. */
export interface QuotaContext {
  readonly storeType: 'memory' | 'redis';
  /** `keys.prefix`, for the default key prefix. */
  readonly keysPrefix: string;
  /** Names of the endpoint rules, for `categories[].rules`. */
  readonly ruleNames: readonly string[];
}

/** The dimensions the tracker keys usage by; all three are always used. */
export const QUOTA_DIMENSIONS: readonly string[] = Object.freeze([
  'tenant_id',
  'endpoint_category',
  'time_bucket',
]);

// biome-ignore lint/suspicious/noExplicitAny: schema-validated YAML data, read field by field below
type Raw = Record<string, any>;

/**
 * Resolves the schema-valid `quota:` section with its defaults and checks what the schema cannot: Redis storage
 * needs the store's Redis connection, the bucket divides the window, categories name existing endpoint rules and
 * valid patterns, names are unique, the dimensions are the three the tracker keys by.
 *
 * @param raw - the section as parsed, or `undefined` when the file has none (then tracking is off).
 * @param context - the parts of the configuration the section refers to.
 * @returns the frozen configuration (`undefined` when absent or invalid) and every issue found.
 *
 * @example
 * ```ts
 * resolveQuotaConfig({ tracking: { storage: 'memory', ttl: 3600 } }, ctx).config?.windowSeconds; // 3600
 * ```
 */
export function resolveQuotaConfig(
  raw: Raw | undefined,
  context: QuotaContext,
): { config: QuotaConfig | undefined; issues: QuotaIssue[] } {
  const issues: QuotaIssue[] = [];
  if (raw === undefined) return { config: undefined, issues };
  const tracking = (raw.tracking ?? {}) as Raw;
  const storage = (tracking.storage ?? context.storeType) as 'memory' | 'redis';
  if (storage === 'redis' && context.storeType !== 'redis') {
    issues.push({
      path: ['quota', 'tracking', 'storage'],
      message:
        'Redis quota storage reuses the store\'s Redis connection: set store.type "redis" with url, cluster or sentinel (or storage "memory")',
    });
  }
  const windowSeconds = seconds(tracking.ttl, ['quota', 'tracking', 'ttl'], 3600, issues);
  const bucketSeconds = seconds(tracking.bucket, ['quota', 'tracking', 'bucket'], 60, issues);
  if (windowSeconds % bucketSeconds !== 0 || windowSeconds / bucketSeconds > 1440) {
    issues.push({
      path: ['quota', 'tracking', tracking.bucket === undefined ? 'ttl' : 'bucket'],
      message: `the bucket (${bucketSeconds}s) must divide the window (ttl ${windowSeconds}s) into at most 1440 buckets`,
    });
  }
  const flushMs = durationMs(tracking.flushInterval) ?? 1000;
  if (flushMs < 10 || flushMs > 60_000) {
    issues.push({
      path: ['quota', 'tracking', 'flushInterval'],
      message: `must be between 10ms and 60s, got ${JSON.stringify(tracking.flushInterval)}`,
    });
  }
  if (raw.dimensions !== undefined) {
    const given = new Set<string>(raw.dimensions);
    const missing = QUOTA_DIMENSIONS.filter((d) => !given.has(d));
    if (missing.length > 0) {
      issues.push({
        path: ['quota', 'dimensions'],
        message: `usage is always tracked by ${QUOTA_DIMENSIONS.join(', ')}; missing ${missing.join(', ')}`,
      });
    }
  }
  const categories: QuotaCategoryConfig[] = [];
  const names = new Set<string>();
  const defaultCategory: string = raw.defaultCategory ?? 'other';
  (raw.categories ?? []).forEach((c: Raw, i: number) => {
    const path = ['quota', 'categories', i];
    if (names.has(c.name) || c.name === defaultCategory) {
      issues.push({
        path: [...path, 'name'],
        message: `category "${c.name}" is ${c.name === defaultCategory ? 'the defaultCategory' : 'defined twice'}`,
      });
    }
    names.add(c.name);
    const rules: string[] = c.rules ?? [];
    const patterns: string[] = c.patterns ?? [];
    if (rules.length === 0 && patterns.length === 0) {
      issues.push({ path, message: 'a category needs "rules" or "patterns"' });
    }
    rules.forEach((r, j) => {
      if (!context.ruleNames.includes(r)) {
        const s = closestName(r, [...context.ruleNames]);
        issues.push({
          path: [...path, 'rules', j],
          message: `no endpoint rule is named "${r}"${s === undefined ? '' : ` (did you mean "${s}"?)`}`,
        });
      }
    });
    patterns.forEach((p, j) => {
      try {
        compilePathPattern(p);
      } catch (e) {
        const expected = (e as { details?: { expected?: string } }).details?.expected;
        issues.push({
          path: [...path, 'patterns', j],
          message: `must be ${expected ?? 'a valid path pattern'}`,
        });
      }
    });
    categories.push(
      Object.freeze({ name: c.name, rules: Object.freeze(rules), patterns: Object.freeze(patterns) }),
    );
  });
  const limits = (raw.limits ?? {}) as Raw;
  const thresholds: number[] = raw.thresholds ?? [0.8, 1];
  thresholds.forEach((t, i) => {
    if (i > 0 && t <= thresholds[i - 1]) {
      issues.push({
        path: ['quota', 'thresholds', i],
        message: `must be above the previous threshold ${thresholds[i - 1]}`,
      });
    }
  });
  const webhook = raw.webhook as Raw | undefined;
  checkUrl(webhook?.url, ['quota', 'webhook', 'url'], issues);
  if (webhook !== undefined && String(webhook.secret).length < 16) {
    issues.push({
      path: ['quota', 'webhook', 'secret'],
      message: 'must be at least 16 characters (take it from an environment variable)',
    });
  }
  const config: QuotaConfig = Object.freeze({
    storage,
    keyPrefix:
      tracking.key_prefix ?? (context.keysPrefix === '' ? 'sluice:quota:' : `${context.keysPrefix}quota:`),
    windowSeconds,
    bucketSeconds,
    flushIntervalMs: flushMs,
    categories: Object.freeze(categories),
    defaultCategory,
    tenantLimits: Object.freeze({ ...(limits.tenants ?? {}) }),
    defaultLimit: limits.default,
    thresholds: Object.freeze([...thresholds]),
    webhook:
      webhook === undefined
        ? undefined
        : Object.freeze({
            url: webhook.url,
            secret: webhook.secret,
            headerPrefix: webhook.headerPrefix ?? 'x-sluice',
          }),
  });
  return { config: issues.length === 0 ? config : undefined, issues };
}

function seconds(value: unknown, path: ConfigPath, fallback: number, issues: QuotaIssue[]): number {
  if (value === undefined) return fallback;
  const ms = durationMs(value as number | string);
  if (ms === undefined || ms < 1000 || ms % 1000 !== 0 || ms > 31 * 86_400_000) {
    issues.push({
      path,
      message: `must be a whole number of seconds from 1s to 31 days, got ${JSON.stringify(value)}`,
    });
    return fallback;
  }
  return ms / 1000;
}
