import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, type SluiceError } from '../core/index.js';
import { PrometheusMetrics } from '../prometheus/index.js';
import { QuotaTracker } from './quota-tracker.js';
import type { QuotaAlert } from './quota-tracker-options.js';
import { QuotaWebhook } from './quota-webhook.js';
import { signWebhook, verifyWebhookSignature } from './webhook-signature.js';

const SECRET = 'test-secret-0123456789';
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

interface Received {
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** A real HTTP receiver on 127.0.0.1 that answers with the given statuses in turn (the last one repeats). */
async function receiver(statuses: number[], extraHeaders: Record<string, string> = {}) {
  const received: Received[] = [];
  const waiters: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const status = statuses[Math.min(received.length - 1, statuses.length - 1)];
      res.writeHead(status, status === 200 ? {} : extraHeaders);
      res.end();
      for (const w of waiters.splice(0)) w();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/quota`;
  const closers = () => new Promise<void>((r) => server.close(() => r()));
  servers.push(closers);
  /** Resolves once `n` requests have arrived (event-driven, no polling of time). */
  const arrived = (n: number) =>
    received.length >= n
      ? Promise.resolve()
      : new Promise<void>((r) => waiters.push(() => void arrived(n).then(r)));
  return { url, received, arrived };
}

const servers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of servers.splice(0)) await close();
});

/** Lets pending I/O callbacks run until the webhook sleeps on the manual clock. */
async function untilSleeping(clock: ManualClock): Promise<void> {
  for (let i = 0; i < 10_000 && clock.pendingSleeps === 0; i++) await new Promise((r) => setImmediate(r));
  expect(clock.pendingSleeps).toBe(1);
}

describe('webhook signatures', () => {
  it('signs timestamp and body with HMAC-SHA256 and verifies in constant time', () => {
    const sig = signWebhook(SECRET, 1767268800, '{"a":1}');
    expect(sig).toMatch(/^t=1767268800,v1=[0-9a-f]{64}$/);
    expect(verifyWebhookSignature(SECRET, sig, '{"a":1}', { nowSeconds: 1767268800 })).toBe(true);
    expect(verifyWebhookSignature(SECRET, sig, '{"a":2}', { nowSeconds: 1767268800 })).toBe(false);
    expect(verifyWebhookSignature('another-secret-012345', sig, '{"a":1}', { nowSeconds: 1767268800 })).toBe(
      false,
    );
    expect(verifyWebhookSignature(SECRET, sig, '{"a":1}', { nowSeconds: 1767268800 + 301 })).toBe(false);
    expect(verifyWebhookSignature(SECRET, 'garbage', '{"a":1}')).toBe(false);
    expect(verifyWebhookSignature(SECRET, undefined, '{"a":1}')).toBe(false);
  });
});

describe('QuotaWebhook', () => {
  it('retries failed attempts with exponential backoff, then delivers, signed, with one delivery id', async () => {
    const r = await receiver([503, 500, 200]);
    const clock = new ManualClock(T0);
    const metrics = new PrometheusMetrics();
    const hook = new QuotaWebhook({ url: r.url, secret: SECRET, clock, metrics, initialBackoffMs: 1000 });
    expect(hook.send('quota.threshold_crossed', { tenant: 'acme' })).toBe(true);
    await r.arrived(1);
    await untilSleeping(clock);
    clock.advance(999);
    expect(r.received).toHaveLength(1);
    clock.advance(1); // first backoff: 1 s
    await r.arrived(2);
    await untilSleeping(clock);
    clock.advance(1999);
    expect(r.received).toHaveLength(2);
    clock.advance(1); // second backoff: 2 s
    await r.arrived(3);
    await hook.idle();
    expect(r.received).toHaveLength(3);
    const ids = new Set(r.received.map((x) => x.headers['x-sluice-delivery']));
    expect(ids.size).toBe(1);
    for (const x of r.received) {
      expect(x.headers['content-type']).toBe('application/json');
      expect(x.headers['x-sluice-event']).toBe('quota.threshold_crossed');
      expect(JSON.parse(x.body)).toEqual({ tenant: 'acme' });
      const sig = x.headers['x-sluice-signature'] as string;
      expect(
        verifyWebhookSignature(SECRET, sig, x.body, { nowSeconds: Math.floor(clock.now() / 1000) }),
      ).toBe(true);
    }
    const text = await metrics.metrics();
    expect(text).toContain('sluice_quota_webhook_deliveries_total{result="retried"} 2');
    expect(text).toContain('sluice_quota_webhook_deliveries_total{result="delivered"} 1');
  });

  it('honours Retry-After up to the backoff cap and gives up after maxAttempts with ERR_WEBHOOK_FAILED', async () => {
    const r = await receiver([429], { 'retry-after': '7' });
    const clock = new ManualClock(T0);
    const errors: SluiceError[] = [];
    const hook = new QuotaWebhook({
      url: r.url,
      secret: SECRET,
      clock,
      maxAttempts: 2,
      initialBackoffMs: 100,
      headerPrefix: 'X-Acme',
      onError: (e) => errors.push(e),
    });
    hook.send('quota.threshold_crossed', { n: 1 });
    await r.arrived(1);
    await untilSleeping(clock);
    clock.advance(6999);
    expect(r.received).toHaveLength(1);
    clock.advance(1);
    await hook.idle();
    expect(r.received).toHaveLength(2);
    expect(r.received[0].headers['x-acme-signature']).toMatch(/^t=\d+,v1=/);
    expect(errors).toHaveLength(1);
    expect(errors[0].code).toBe('ERR_WEBHOOK_FAILED');
    expect(errors[0].details.reason).toBe('HTTP 429');
  });

  it('reads a Retry-After too large to represent as the longest wait, the backoff cap, not as malformed', async () => {
    const r = await receiver([503, 200], { 'retry-after': '99999999999999999999' });
    const clock = new ManualClock(T0);
    const hook = new QuotaWebhook({
      url: r.url,
      secret: SECRET,
      clock,
      maxAttempts: 2,
      initialBackoffMs: 100,
      maxBackoffMs: 30_000,
    });
    hook.send('quota.threshold_crossed', { n: 1 });
    await r.arrived(1);
    await untilSleeping(clock);
    // RFC 9111 section 1.2.2: an overflowing delta-seconds counts as 2^31 s, so the wait is the 30 s cap, not 100 ms.
    clock.advance(29_999);
    expect(clock.pendingSleeps).toBe(1);
    clock.advance(1);
    expect(clock.pendingSleeps).toBe(0);
    await hook.idle();
    expect(r.received).toHaveLength(2);
  });

  it('gives up at once on a status that retrying cannot fix', async () => {
    const r = await receiver([400]);
    const errors: SluiceError[] = [];
    const hook = new QuotaWebhook({ url: r.url, secret: SECRET, onError: (e) => errors.push(e) });
    hook.send('e', {});
    await hook.idle();
    expect(r.received).toHaveLength(1);
    expect(errors[0].details.reason).toBe('HTTP 400');
  });

  it('never blocks: send returns at once, a full queue drops and counts', async () => {
    const r = await receiver([200]);
    const metrics = new PrometheusMetrics();
    const hook = new QuotaWebhook({ url: r.url, secret: SECRET, maxQueue: 2, metrics });
    expect(hook.send('e', { i: 1 })).toBe(true);
    expect(hook.send('e', { i: 2 })).toBe(true);
    expect(hook.send('e', { i: 3 })).toBe(false);
    await hook.idle();
    expect(r.received.map((x) => JSON.parse(x.body).i)).toEqual([1, 2]);
    expect(await metrics.metrics()).toContain('sluice_quota_webhook_deliveries_total{result="dropped"} 1');
  });

  it('retries a refused connection and stops waiting when closed', async () => {
    const r = await receiver([200]);
    const url = r.url;
    await servers.pop()!(); // nothing listens there any more
    const clock = new ManualClock(T0);
    const hook = new QuotaWebhook({ url, secret: SECRET, clock });
    hook.send('e', {});
    await untilSleeping(clock);
    await hook.close();
    expect(hook.pending).toBe(0);
    expect(hook.send('e', {})).toBe(false);
  });

  it('rejects invalid options', () => {
    expect(() => new QuotaWebhook({ url: 'ftp://x', secret: SECRET })).toThrow(/webhook.url must be/);
    expect(() => new QuotaWebhook({ url: 'http://127.0.0.1/', secret: 'short' })).toThrow(/webhook.secret/);
    expect(() => new QuotaWebhook({ url: 'http://127.0.0.1/', secret: SECRET, maxAttempts: 0 })).toThrow(
      /maxAttempts/,
    );
    expect(() => new QuotaWebhook({ url: 'http://127.0.0.1/', secret: SECRET, headerPrefix: 'x y' })).toThrow(
      /headerPrefix/,
    );
  });

  it('is fed by the quota tracker when a threshold is crossed', async () => {
    const r = await receiver([200]);
    const clock = new ManualClock(T0);
    const q = new QuotaTracker({
      clock,
      flushIntervalMs: 0,
      quotas: { acme: 10 },
      webhook: { url: r.url, secret: SECRET, clock },
    });
    q.record('acme', 'read', 10);
    await q.flush();
    await q.webhook?.idle();
    const bodies = r.received.map((x) => JSON.parse(x.body) as QuotaAlert);
    expect(bodies.map((b) => [b.type, b.tenant, b.threshold])).toEqual([
      ['quota.threshold_crossed', 'acme', 0.8],
      ['quota.threshold_crossed', 'acme', 1],
    ]);
    await q.close();
  });
});
