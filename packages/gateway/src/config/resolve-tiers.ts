import type { TierConfig } from './gateway-config.js';
import { resolveTierCapacity } from './resolve-concurrency.js';
import { resolveCost } from './resolve-cost.js';
import { resolveQueue } from './resolve-queue.js';
import { exactRange } from './rule-issues.js';
import type { SemanticIssue } from './semantic-issue.js';

// The raw shape after schema validation: only the types the schema guarantees, so every access is checked here.
// biome-ignore lint/suspicious/noExplicitAny: schema-validated YAML data, read field by field below
type Raw = Record<string, any>;

/**
 * Resolves `rateLimiting.tiers`: each tier's per minute, per hour and burst (or unlimited), its queue, costs and
 * capacity, with every issue found appended to `issues`.
 *
 * @param rl - the `rateLimiting` section, schema-valid.
 * @param raw - the whole configuration (a tier's concurrency reads `rateLimiting.concurrencyRetryAfter`).
 * @param issues - where the issues go.
 * @returns the tiers by name, on an object without prototype.
 */
export function resolveTiers(rl: Raw, raw: Raw, issues: SemanticIssue[]): Record<string, TierConfig> {
  // No prototype: a name such as `constructor` is defined only when the file defines it.
  const tiers: Record<string, TierConfig> = Object.create(null);
  for (const [name, t] of Object.entries(rl.tiers as Record<string, Raw>)) {
    const path = ['rateLimiting', 'tiers', name];
    const unlimited = t.unlimited === true;
    if (
      unlimited &&
      (t.requestsPerMinute !== undefined || t.requestsPerHour !== undefined || t.burstLimit !== undefined)
    ) {
      issues.push({
        path: [...path, 'unlimited'],
        message: 'an unlimited tier takes no requestsPerMinute, requestsPerHour or burstLimit',
      });
    }
    if (!unlimited && t.requestsPerMinute === undefined) {
      issues.push({ path, message: 'missing required key "requestsPerMinute" (or set unlimited: true)' });
    }
    exactRange(
      t.burstLimit ?? t.requestsPerMinute,
      60,
      [...path, t.burstLimit === undefined ? 'requestsPerMinute' : 'burstLimit'],
      issues,
    );
    exactRange(t.requestsPerHour, 3600, [...path, 'requestsPerHour'], issues);
    tiers[name] = Object.freeze({
      name,
      unlimited,
      perMinute: unlimited ? 0 : (t.requestsPerMinute ?? 0),
      burst: unlimited ? 0 : (t.burstLimit ?? t.requestsPerMinute ?? 0),
      perHour: unlimited ? undefined : t.requestsPerHour,
      shadow: t.shadow === true,
      ...resolveQueue(t, path, issues),
      ...resolveCost(t, path, issues, unlimited ? undefined : (t.burstLimit ?? t.requestsPerMinute)),
      ...resolveTierCapacity(t, raw, path, issues),
    });
  }
  return tiers;
}
