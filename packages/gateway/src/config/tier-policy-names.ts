import { CLASS_CATALOGUES } from './class-catalogue.js';
import { DEFAULT_PUBLIC_AUTH } from './gateway-config.js';
import type { SemanticIssue } from './semantic-issue.js';

/** The suffix of a tier's per-hour policy name: tier `standard` has policies `standard` and `standard.hour`. */
export const HOUR_SUFFIX = '.hour';

/** The suffix of a tier's concurrency policy name: `concurrentRequests` of tier `free` is `free.concurrent`. */
export const CONCURRENT_SUFFIX = '.concurrent';

/**
 * The policy names the gateway derives from a tier's name, whether the tier sets the limit or not: a name that
 * appears only once a reload adds `requestsPerHour` must not then belong to someone else already.
 *
 * @param tier - the tier's name.
 * @returns which policy each derived name is, by name.
 */
export function derivedTierPolicies(tier: string): ReadonlyMap<string, string> {
  return new Map([
    [`${tier}${HOUR_SUFFIX}`, 'per-hour policy'],
    [`${tier}${CONCURRENT_SUFFIX}`, 'concurrency policy'],
  ]);
}

/**
 * Whether `name` is a policy name of a tier: its own name or one derived from it.
 *
 * @param name - the name to test.
 * @param tiers - the tier names.
 */
export function isTierPolicyName(name: string, tiers: Iterable<string>): boolean {
  for (const tier of tiers) if (name === tier || derivedTierPolicies(tier).has(name)) return true;
  return false;
}

/**
 * The tiers whose names are already another policy's: the limiter files policies by name, so such a tier would
 * share that policy's bucket and never get its own limits. Refused are another tier's derived names
 * (`<tier>.hour`, `<tier>.concurrent`), the failed-credentials bucket (`rl.public_auth` or
 * `identity.publicAuthClass`), every configured class and every class of a shipped catalogue. Each offending tier
 * is reported once, at its key, with what owns the name.
 *
 * @param tiers - the tier names, in the file's order.
 * @param classes - the configured class names.
 * @param publicAuth - the class failed credentials count against.
 */
export function tierNameIssues(
  tiers: readonly string[],
  classes: readonly string[],
  publicAuth: string,
): SemanticIssue[] {
  const owners = new Map<string, string>();
  for (const [catalogue, entries] of Object.entries(CLASS_CATALOGUES))
    for (const c of entries) owners.set(c.name, `a class of catalogue "${catalogue}"`);
  for (const c of classes) owners.set(c, `the policy of class "${c}"`);
  for (const name of [DEFAULT_PUBLIC_AUTH.name, publicAuth])
    owners.set(name, 'the policy of the failed-credentials bucket');
  for (const tier of tiers)
    for (const [name, what] of derivedTierPolicies(tier)) owners.set(name, `the ${what} of tier "${tier}"`);
  const issues: SemanticIssue[] = [];
  for (const tier of tiers) {
    const owner = owners.get(tier);
    if (owner !== undefined)
      issues.push({
        path: ['rateLimiting', 'tiers', tier],
        message: `tier name "${tier}" is already ${owner}; choose another name`,
        atKey: true,
      });
  }
  return issues;
}
