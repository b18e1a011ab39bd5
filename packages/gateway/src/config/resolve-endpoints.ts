import { compilePathPattern } from 'sluice/http';
import { durationMs } from './duration.js';
import type { ClassConfig, EndpointRule, TierConfig } from './gateway-config.js';
import { resolveRuleCapacity } from './resolve-concurrency.js';
import { ruleCost } from './resolve-cost.js';
import { resolveQueue } from './resolve-queue.js';
import { resolveRuleRefill } from './resolve-refill.js';
import { exactRange, patternIssue, policyNameIssue } from './rule-issues.js';
import type { SemanticIssue } from './semantic-issue.js';
import { didYouMean as hint } from './suggest.js';
import { isTierPolicyName } from './tier-policy-names.js';

// The raw shape after schema validation: only the types the schema guarantees, so every access is checked here.
// biome-ignore lint/suspicious/noExplicitAny: schema-validated YAML data, read field by field below
type Raw = Record<string, any>;

/**
 * Resolves `rateLimiting.endpoints`: each endpoint rule's pattern, its limits (its own or its policy class's),
 * refill, queue, capacity and cost, and a policy name distinct from every other rule's and every tier's, with
 * every issue found appended to `issues`.
 *
 * @param rl - the `rateLimiting` section, schema-valid.
 * @param raw - the whole configuration (a rule's concurrency reads its class and `concurrencyRetryAfter`).
 * @param tiers - the resolved tiers, whose policy names a rule may not take.
 * @param classes - the configured policy classes.
 * @param issues - where the issues go.
 * @returns the rules, in the file's order.
 */
export function resolveEndpoints(
  rl: Raw,
  raw: Raw,
  tiers: Readonly<Record<string, TierConfig>>,
  classes: Readonly<Record<string, ClassConfig>>,
  issues: SemanticIssue[],
): EndpointRule[] {
  const endpoints: EndpointRule[] = [];
  const names = new Set<string>();
  (rl.endpoints ?? []).forEach((e: Raw, index: number) => {
    const path = ['rateLimiting', 'endpoints', index];
    // A missing pattern is the schema's violation already; compiling nothing would report it twice.
    if (e.pattern !== undefined)
      patternIssue(() => compilePathPattern(e.pattern), [...path, 'pattern'], issues);
    let limit = 0;
    let windowSeconds = 60;
    let burst = 0;
    let className: string | undefined;
    if (e.class !== undefined) {
      className = e.class;
      for (const k of ['limit', 'window', 'burst']) {
        if (e[k] !== undefined)
          issues.push({
            path: [...path, k],
            message: `"${k}" cannot be combined with "class": the class sets the limits`,
            atKey: true,
          });
      }
      const c = classes[e.class];
      if (c === undefined) {
        issues.push({
          path: [...path, 'class'],
          message: `class "${e.class}" is not configured: add ratelimit.${e.class}.per_minute and .burst${hint(e.class, Object.keys(classes))}`,
        });
      } else {
        limit = c.perMinute;
        burst = c.burst;
      }
    } else if (e.refill === undefined && e.concurrent === undefined) {
      if (e.limit === undefined)
        issues.push({ path, message: 'missing required key "limit" (or name a "class")' });
      if (e.window === undefined)
        issues.push({ path, message: 'missing required key "window", for example 60s (or name a "class")' });
      const ms = durationMs(e.window);
      if (ms !== undefined && (ms < 1000 || ms % 1000 !== 0)) {
        issues.push({
          path: [...path, 'window'],
          message: `must be a whole number of seconds of at least 1s, got ${JSON.stringify(e.window)}`,
        });
      }
      limit = e.limit ?? 0;
      windowSeconds = ms === undefined ? 60 : Math.max(1, Math.floor(ms / 1000));
      burst = e.burst ?? limit;
    }
    // Rules naming one class share its bucket (one bucket per class and key), so the class is their policy name.
    const name = e.name ?? className ?? e.pattern;
    policyNameIssue(name, [...path, e.name === undefined ? 'pattern' : 'name'], issues);
    if (className === undefined && names.has(name)) {
      issues.push({
        path: [...path, e.name === undefined ? 'pattern' : 'name'],
        message: `policy name "${name}" is used by an earlier rule; give this rule a distinct "name"`,
      });
    }
    names.add(name);
    if (isTierPolicyName(name, Object.keys(tiers))) {
      issues.push({
        path: [...path, 'name'],
        message: `policy name "${name}" is already a tier's policy name`,
      });
    }
    if (className === undefined)
      exactRange(burst, windowSeconds, [...path, e.burst === undefined ? 'limit' : 'burst'], issues);
    endpoints.push(
      Object.freeze({
        index,
        name,
        pattern: e.pattern,
        methods: e.methods,
        limit,
        windowSeconds,
        burst,
        ...resolveRuleRefill(e, path, classes, issues),
        className,
        shadow: e.shadow === true,
        ...resolveQueue(e, path, issues),
        ...resolveRuleCapacity(e, raw, path, issues),
        ...ruleCost(e, path, className === undefined ? undefined : classes[className], issues, burst),
      }),
    );
  });
  return endpoints;
}
