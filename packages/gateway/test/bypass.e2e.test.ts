import { fileURLToPath } from 'node:url';
import { compilePathPattern, compileTargetCanonicalizer } from 'sluice/http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawResponse } from '../../../test/support/one-socket.js';
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
import { startGateway, type TestGateway } from './support.js';

/*
 * "Nothing gets past the limiter": the gateway runs the example configuration in front of real servers that say
 * which of their own routes served each request, and a corpus of request targets (known attacks plus a fixed
 * fast-check sample) tries to reach the protected routes past the endpoint rules. Whatever a server makes of a
 * target, a request its protected route serves must have been counted by that route's rule.
 */

const EXAMPLE = fileURLToPath(new URL('../examples/rate-limits.yaml', import.meta.url));
const UPSTREAMS: readonly RouteAppKind[] = ['express', 'fastify', 'hono', 'node', 'servlet', 'nginx'];
const corpus = targetCorpus();
const canonical = compileTargetCanonicalizer();

/** The endpoint rule that guards each protected route in the example configuration (its pattern names it). */
const RULES: Record<TargetAim, GuardingRule> = {
  seal: { policy: GUARD_PATTERNS.seal, limit: 5, window: 3600 },
  studio: { policy: GUARD_PATTERNS.studio, limit: 10, window: 60 },
};
const AIMS: readonly TargetAim[] = ['seal', 'studio'];
const PROTECTED: ReadonlySet<string> = new Set<string>(AIMS);
const guards = {
  seal: compilePathPattern(GUARD_PATTERNS.seal),
  studio: compilePathPattern(GUARD_PATTERNS.studio),
};

function describeResponse(r: RawResponse): string {
  return `${r.status} route=${r.headers[ROUTE_HEADER] ?? '-'} seen=${r.headers[SEEN_HEADER] ?? '-'} policy=${r.headers['ratelimit-policy'] ?? '-'}`;
}

describe.each(UPSTREAMS)('the gateway in front of %s', (kind) => {
  let app: RouteApp;
  let gw: TestGateway;
  let client: TargetClient;

  beforeAll(async () => {
    app = await startRouteApp(kind);
    gw = await startGateway(EXAMPLE, { overrides: { upstream: app.url } });
    client = new TargetClient(gw.gateway.url);
  });
  afterAll(async () => {
    client?.close();
    await gw?.gateway.close();
    await app?.close();
  });

  it('refuses non-canonical shapes with 400, forwards the canonical target, and counts every protected hit', async () => {
    const violations: string[] = [];
    for (const c of corpus) {
      // A full hour between cases: every bucket is full, so each case is judged on its own.
      gw.clock.advance(3_600_000);
      const r = await client.send(c.method, c.target);
      const expected = canonical(c.target);
      const route = r.headers[ROUTE_HEADER];
      const shape = `${c.method} ${JSON.stringify(c.target)}`;
      if (route !== undefined && PROTECTED.has(route)) {
        const aim = route as TargetAim;
        const why = uncountedHit(r, RULES[aim], RULES[aim].limit - 1);
        if (why !== undefined) violations.push(`${shape}: reached ${aim} ${why}; ${describeResponse(r)}`);
      }
      if (!expected.ok) {
        if (r.status !== 400 || !(r.headers['content-type'] ?? '').startsWith('application/problem+json')) {
          violations.push(
            `${shape}: expected 400 problem+json (${expected.code}), got ${describeResponse(r)}`,
          );
        }
        continue;
      }
      if (r.status === 400) violations.push(`${shape}: refused an acceptable target: ${describeResponse(r)}`);
      if (route !== undefined && r.headers[SEEN_HEADER] !== expected.path + expected.query) {
        violations.push(
          `${shape}: upstream received ${JSON.stringify(r.headers[SEEN_HEADER])}, not the canonical ${JSON.stringify(expected.path + expected.query)}`,
        );
      }
    }
    expect(violations).toEqual([]);
  });

  it('lets no shape reach a protected route once its rule has nothing left', async () => {
    const violations: string[] = [];
    const drain = async (aim: TargetAim) => {
      const path = aim === 'seal' ? ROUTE_PATHS.seal : ROUTE_PATHS.studio;
      for (let i = 0; i <= RULES[aim].limit; i++) {
        if ((await client.send('POST', path)).status === 429) return;
      }
      throw new Error(`the ${aim} rule never refused ${path}`);
    };
    // Every bucket full, then the seal rule drained to exactly zero: at 200 ms a case it earns back a twentieth
    // of a request over the whole corpus. The tier earns back its one request a case (300 a minute); the studio
    // rule one every 30 cases, so it is drained again before each case.
    gw.clock.advance(3_600_000);
    await drain('seal');
    for (const c of corpus) {
      gw.clock.advance(200);
      await drain('studio');
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
          `${c.method} ${JSON.stringify(c.target)}: reached ${route} past an empty bucket: ${describeResponse(r)}`,
        );
      }
    }
    expect(violations).toEqual([]);
  });
});

describe('the corpus', () => {
  it('holds every known attack shape and a bounded generated sample', () => {
    const targets = corpus.map((c) => c.target);
    for (const t of [
      '/system/airgap/seal#1',
      '/system/airgap%2Fseal',
      '/.well-known/..%2Fsystem%2Fairgap%2Fseal',
      '/x/..%2Fsystem/airgap/seal',
      '/system\\airgap\\seal',
      '/system/airgap/seal;x',
      '/system/airgap/seal;x=1',
      '/api/risk/simulation/studio/',
      '/api/risk/simulation/studio//',
      '/api/risk/simulation/studio/x/..',
      '/api/risk/simulation/studio/%2e',
    ]) {
      expect(targets).toContain(t);
    }
    expect(corpus.length).toBeLessThan(200);
    expect(corpus.filter((c) => c.source === 'generated').length).toBeGreaterThan(40);
  });
});
