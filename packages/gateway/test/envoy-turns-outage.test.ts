import { join } from 'node:path';
import { credentials, type ServiceError } from '@grpc/grpc-js';
import { type Check, type Decision, ErrorCode, SluiceError } from 'sluice';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EnvoyRateLimitServer, rateLimitPackage } from '../src/envoy/grpc-server.js';
import { RateLimitService } from '../src/envoy/rate-limit-service.js';
import { MIXED_REQUEST, mixedDomainYaml } from './envoy-mixed-domain.js';
import { serviceHostOf } from './envoy-service-host.js';
import { startGateway, type TestGateway, tempDir, WALL_MS } from './support.js';

// Requests decided in several store calls wait for their turn on the buckets they share. A request whose caller
// left ends without a store call; the queue behind a request that found the store failing is answered by the
// failure mode at once; past the bound of waiting requests a request is decided out of turn. The store here
// answers when told to.

const yaml = mixedDomainYaml(50);
const mixed = MIXED_REQUEST;

const { dir, cleanup } = tempDir();
let t: TestGateway;
beforeAll(async () => {
  t = await startGateway(join(dir, 'turns.yaml'), { yaml });
});
afterAll(async () => {
  await t.gateway.close();
  cleanup();
});

/** A store whose peeks wait until released (or fail), counting every call, and the decisions the metrics saw. */
function heldStore() {
  const real = t.gateway.store;
  const pending: { go: () => void; fail: () => void }[] = [];
  const calls: string[] = [];
  const store = {
    kind: real.kind,
    peek: (checks: Check[], cost: number) => {
      calls.push('peek');
      return new Promise<Decision>((resolve, reject) =>
        pending.push({
          go: () => resolve(real.peek(checks, cost) as Decision),
          fail: () => reject(new SluiceError(ErrorCode.StoreUnavailable, 'redis: command timed out')),
        }),
      );
    },
    decide: (checks: Check[], cost: number) => {
      calls.push('decide');
      return real.decide(checks, cost);
    },
    refund: (checks: Check[], cost: number) => real.refund(checks, cost),
  };
  const { host, decisions } = serviceHostOf(t.gateway, store);
  return {
    host,
    pending,
    calls,
    /** The reasons of the decisions recorded, in order. */
    get seen() {
      return decisions.map((d) => d.reason);
    },
  };
}

const flush = () => new Promise<void>((r) => setImmediate(r));

it('ends a queued request whose caller left without a store call, and counts no decision for it', async () => {
  const s = heldStore();
  const rls = new RateLimitService(s.host, () => WALL_MS);
  const first = rls.shouldRateLimit(mixed);
  let left = false;
  const second = rls.shouldRateLimit(mixed, undefined, () => left);
  const settled = second.then(
    () => 'answered',
    (e: Error) => e.message,
  );
  await flush();
  expect(s.calls).toEqual(['peek', 'peek']);
  left = true;
  for (const p of s.pending) p.go();
  expect((await first).overall_code).toBe('OK');
  expect(await settled).toBe('the caller left before its turn');
  expect(s.calls).toEqual(['peek', 'peek', 'decide', 'decide']);
  expect(s.seen).toEqual(['allowed']);
});

it('answers the requests queued behind a store timeout by the failure mode at once, without a store call', async () => {
  const s = heldStore();
  const rls = new RateLimitService(s.host, () => WALL_MS);
  const first = rls.shouldRateLimit(mixed);
  const queued = [rls.shouldRateLimit(mixed), rls.shouldRateLimit(mixed), rls.shouldRateLimit(mixed)];
  await flush();
  expect(s.pending).toHaveLength(2);
  for (const p of s.pending) p.fail();
  expect((await first).overall_code).toBe('OK');
  for (const answer of await Promise.all(queued)) {
    expect(answer.overall_code).toBe('OK');
    expect(answer.response_headers_to_add).toEqual([]);
  }
  expect(s.calls).toEqual(['peek', 'peek']);
  expect(s.seen).toEqual(['store_unavailable_open', 'store_unavailable_open', 'store_unavailable_open']);
  // The queue drained: the next request asks the store again.
  const next = rls.shouldRateLimit(mixed);
  await flush();
  expect(s.calls).toHaveLength(4);
  for (const p of s.pending.slice(2)) p.go();
  expect((await next).overall_code).toBe('OK');
});

it('decides a request past the bound of waiting requests at once, out of turn', async () => {
  const s = heldStore();
  const rls = new RateLimitService(s.host, () => WALL_MS, 1);
  const first = rls.shouldRateLimit(mixed);
  const waiting = rls.shouldRateLimit(mixed);
  const past = rls.shouldRateLimit(mixed);
  await flush();
  // The first request's peeks and the third's; the second waits.
  expect(s.calls).toEqual(['peek', 'peek', 'peek', 'peek']);
  for (const p of s.pending.splice(0)) p.go();
  await flush();
  for (const p of s.pending.splice(0)) p.go();
  const answers = await Promise.all([first, waiting, past]);
  expect(answers.map((a) => a.overall_code)).toEqual(['OK', 'OK', 'OK']);
});

type Client = InstanceType<ReturnType<typeof rateLimitPackage>['RateLimitService']>;

it('over gRPC, a queued call whose deadline passed leaves its turn without touching the store', async () => {
  const s = heldStore();
  const config = t.gateway.runtime.config.envoy;
  if (config === undefined) throw new Error('no envoy section');
  let clock = Date.now();
  const server = await EnvoyRateLimitServer.start({ host: s.host, config, now: () => clock });
  const Ctor = rateLimitPackage().RateLimitService;
  const client: Client = new Ctor(server.address, credentials.createInsecure());
  try {
    const ask = (deadline?: number) =>
      new Promise<string>((resolve) => {
        client.ShouldRateLimit(
          mixed,
          deadline === undefined ? {} : { deadline },
          (e: ServiceError | null, r: { overall_code: string }) =>
            resolve(e ? `error ${e.code}` : r.overall_code),
        );
      });
    const first = ask();
    while (s.calls.length < 2) await flush();
    const deadline = Date.now() + 600_000;
    const late = ask(deadline);
    // The server's clock passes the late call's deadline while it waits for its turn.
    clock = deadline + 600_000;
    await flush();
    for (const p of s.pending) p.go();
    expect(await first).toBe('OK');
    expect(await late).toBe('error 14');
    // Another call of the same buckets after them: the late one took nothing and decided nothing.
    const next = ask();
    while (s.pending.length < 4) await flush();
    for (const p of s.pending.slice(2)) p.go();
    expect(await next).toBe('OK');
    expect(s.calls).toEqual(['peek', 'peek', 'decide', 'decide', 'peek', 'peek', 'decide', 'decide']);
    expect(s.seen).toEqual(['allowed', 'allowed']);
  } finally {
    client.close();
    await server.close();
  }
});
