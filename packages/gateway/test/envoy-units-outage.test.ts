import { join } from 'node:path';
import type { Check, Decision } from 'sluice';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AdmissionHost } from '../src/admission/admit-request.js';
import { RateLimitService } from '../src/envoy/rate-limit-service.js';
import { MIXED_REQUEST, mixedDomainYaml } from './envoy-mixed-domain.js';
import { serviceHostOf } from './envoy-service-host.js';
import { startGateway, type TestGateway, tempDir, WALL_MS } from './support.js';

// A request whose descriptors have different costs is decided in several store calls, in its turn on its buckets:
// while Redis does not answer, each call waits for the store's timeout, and the requests of the same buckets wait
// behind it. These tests watch the calls through a store that answers when told to.

const yaml = mixedDomainYaml(50);
const mixed = MIXED_REQUEST;

const { dir, cleanup } = tempDir();
let t: TestGateway;
beforeAll(async () => {
  t = await startGateway(join(dir, 'units.yaml'), { yaml });
});
afterAll(async () => {
  await t.gateway.close();
  cleanup();
});

/** The gateway as the service sees it, with `store` replaced. */
function withStore(store: unknown): AdmissionHost {
  return serviceHostOf(t.gateway, store).host;
}

const flush = () => new Promise<void>((r) => setImmediate(r));

it('asks the store for every peek of a request at once, not one after the other', async () => {
  const real = t.gateway.store;
  const pending: (() => void)[] = [];
  const store = {
    kind: real.kind,
    peek: (checks: Check[], cost: number) =>
      new Promise<Decision>((resolve) => pending.push(() => resolve(real.peek(checks, cost) as Decision))),
    decide: (checks: Check[], cost: number) => real.decide(checks, cost),
    refund: (checks: Check[], cost: number) => real.refund(checks, cost),
  };
  const rls = new RateLimitService(withStore(store), () => WALL_MS);
  const answer = rls.shouldRateLimit(mixed);
  await flush();
  expect(pending).toHaveLength(2);
  for (const go of pending) go();
  expect((await answer).overall_code).toBe('OK');
});

it('takes nothing for a descriptor that failure mode open admitted, and says so', async () => {
  const real = t.gateway.store;
  const decided: string[] = [];
  const store = {
    kind: real.kind,
    peek: async (checks: Check[], cost: number): Promise<Decision> => {
      const d = (await real.peek(checks, cost)) as Decision;
      // The path's bucket lives on a Redis node that does not answer.
      if (!checks[0]?.policy.name.endsWith('path')) return d;
      const { allowed, outcomes } = d;
      return {
        allowed,
        reason: 'store_unavailable_open',
        cost: d.cost,
        retryAfterSeconds: 0,
        delayMs: 0,
        outcomes,
        violated: [],
      };
    },
    decide: (checks: Check[], cost: number) => {
      decided.push(checks.map((c) => c.policy.name).join());
      return real.decide(checks, cost);
    },
    refund: (checks: Check[], cost: number) => real.refund(checks, cost),
  };
  const { host, decisions: seen } = serviceHostOf(t.gateway, store);
  const rls = new RateLimitService(host, () => WALL_MS);
  expect((await rls.shouldRateLimit(mixed)).overall_code).toBe('OK');
  expect(decided).toEqual(['mixed.remote_address']);
  expect(seen.map((d) => d.reason)).toEqual(['store_unavailable_open']);
});
