/**
 * The rule lists the override benchmarks time lookups against, and a store that holds one fixed list (built at
 * once: setting 10,000 rules one by one is the admin path, not what is timed). Shared by bench/overrides.bench.ts
 * and bench/overrides-tenant.bench.ts, which loads two trees' `sluice` and so passes its own parser.
 */

/** The pattern of rule `i` of `count`: the callers' own keys first when `matching`, else other tenants' keys. */
export function benchPattern(i: number, matching: boolean, callers: number): string {
  if (matching && i < callers) return `tenant:t${i}:client:web`;
  if (i % 2 === 0) return `tenant:other${i}:client:web`;
  if (i % 4 === 1) return `tenant:x${i}`;
  return `tenant:p${i}:client:*`;
}

/** A store answering with one fixed snapshot of `rules`; writes do nothing. */
export function fixedOverrideStore<R>(rules: readonly R[]) {
  const snapshot = Object.freeze({ version: 1, rules: Object.freeze([...rules]) });
  return {
    kind: 'fixed',
    snapshot: () => snapshot,
    set: async () => undefined,
    remove: async () => undefined,
    history: async () => [],
    refresh: () => undefined,
    close: () => undefined,
  };
}
