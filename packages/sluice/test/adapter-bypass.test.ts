import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GUARD_PATTERNS,
  type GuardingRule,
  type TargetAim,
  TargetClient,
  targetCorpus,
  uncountedHit,
} from '../../../test/support/request-target-corpus.js';
import {
  ROUTE_HEADER,
  ROUTE_PATHS,
  type RouteApp,
  type RouteAppKind,
  SEEN_HEADER,
  startRouteApp,
} from '../../../test/support/route-reporting-apps.js';
import { Limiter, ManualClock } from '../src/core/index.js';
import { compilePathPattern, compileTargetCanonicalizer, createHttpLimiter } from '../src/http/index.js';
import { MemoryStore } from '../src/memory/index.js';

/*
 * "Nothing gets past the limiter", for the library: each adapter is mounted in front of its framework's own
 * router with a rule on each protected route, and the bypass corpus is sent straight to the framework. Whatever
 * route the framework picks for a target, a request its protected route serves must have been counted by that
 * route's rule: the adapters must match rules on the path the framework routes on.
 */

const ADAPTERS: readonly RouteAppKind[] = ['node', 'servlet', 'express', 'fastify', 'hono'];
const corpus = targetCorpus();

const RULES: Record<TargetAim, GuardingRule> = {
  seal: { policy: 'airgap.seal', limit: 5, window: 3600 },
  studio: { policy: 'studio.run', limit: 10, window: 60 },
};
const AIMS: readonly TargetAim[] = ['seal', 'studio'];
const PROTECTED: ReadonlySet<string> = new Set<string>(AIMS);
const guards = {
  seal: compilePathPattern(GUARD_PATTERNS.seal),
  studio: compilePathPattern(GUARD_PATTERNS.studio),
};
/** What the limiter matches rules on: its default canonical form of the target. */
const canonical = compileTargetCanonicalizer();

function describeResponse(r: { status: number; headers: Readonly<Record<string, string>> }): string {
  return `${r.status} route=${r.headers[ROUTE_HEADER] ?? '-'} seen=${r.headers[SEEN_HEADER] ?? '-'} policy=${r.headers['ratelimit-policy'] ?? '-'}`;
}

describe.each(ADAPTERS)('the %s adapter in front of its router', (kind) => {
  const clock = new ManualClock(0);
  let app: RouteApp;
  let client: TargetClient;

  beforeAll(async () => {
    const limiter = new Limiter({
      policies: [
        { name: RULES.seal.policy, quota: 5, window: 3600, burst: 5 },
        { name: RULES.studio.policy, quota: 10, window: 60, burst: 10 },
      ],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    });
    const http = createHttpLimiter({
      limiter,
      rules: [
        { path: GUARD_PATTERNS.seal, policies: [RULES.seal.policy], key: 'ip' },
        { path: GUARD_PATTERNS.studio, policies: [RULES.studio.policy], key: 'ip' },
      ],
    });
    app = await startRouteApp(kind, http);
    client = new TargetClient(app.url);
  });
  afterAll(async () => {
    client?.close();
    await app?.close();
  });

  it('counts every request the protected routes serve against their rule', async () => {
    const violations: string[] = [];
    for (const c of corpus) {
      // A full hour between cases: both buckets are full, so each case is judged on its own.
      clock.advance(3_600_000);
      const r = await client.send(c.method, c.target);
      const route = r.headers[ROUTE_HEADER];
      if (route !== undefined && PROTECTED.has(route)) {
        const aim = route as TargetAim;
        const why = uncountedHit(r, RULES[aim], RULES[aim].limit - 1);
        if (why !== undefined) {
          violations.push(
            `${c.method} ${JSON.stringify(c.target)}: reached ${aim} ${why}; ${describeResponse(r)}`,
          );
        }
      }
    }
    expect(violations).toEqual([]);
  });

  it('lets no shape reach a protected route once its rule has nothing left', async () => {
    // The clock stands still: drained once, the buckets stay below one whole request for the whole corpus.
    for (const aim of ['seal', 'studio'] as const) {
      const path = aim === 'seal' ? ROUTE_PATHS.seal : ROUTE_PATHS.studio;
      let refused = false;
      for (let i = 0; i <= RULES[aim].limit && !refused; i++)
        refused = (await client.send('POST', path)).status === 429;
      expect(refused, `the ${aim} rule refused ${path}`).toBe(true);
    }
    const violations: string[] = [];
    for (const c of corpus) {
      const r = await client.send(c.method, c.target);
      const route = r.headers[ROUTE_HEADER];
      const expected = canonical(c.target);
      for (const aim of AIMS) {
        if (expected.ok && guards[aim].match(expected.path) && r.status !== 429) {
          violations.push(
            `${c.method} ${JSON.stringify(c.target)}: is the ${aim} rule's (${expected.path}) but was not refused 429: ${describeResponse(r)}`,
          );
        }
      }
      if (route !== undefined && PROTECTED.has(route)) {
        violations.push(
          `${c.method} ${JSON.stringify(c.target)}: reached ${route} past an empty bucket; ${describeResponse(r)}`,
        );
      }
    }
    expect(violations).toEqual([]);
  });
});
