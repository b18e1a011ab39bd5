/**
 * A denied request's body on each adapter: a chunked body within the drain bound is read and dropped so that the
 * request pipelined behind it is answered on the same connection, and with `deferContinue` a request that asked
 * `Expect: 100-continue` gets its 429 without a `100 Continue` first (the client never uploads), while an admitted
 * one gets its `100 Continue` when the application reads the body.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { OneSocket } from '../../../test/support/one-socket.js';
import { Limiter, ManualClock, type PolicyOptions } from '../src/core/index.js';
import { createHttpLimiter, deferContinue } from '../src/http/index.js';
import { MemoryStore } from '../src/memory/index.js';
import { ADAPTERS, type RunningApp, startApp } from './support/adapter-apps.js';

const POLICIES: PolicyOptions[] = [{ name: 'rl.write', quota: 60, window: 60, burst: 1 }];

function limiter() {
  return createHttpLimiter({
    limiter: new Limiter({
      policies: POLICIES,
      store: new MemoryStore({ clock: new ManualClock(0), sweepIntervalMs: 0 }),
    }),
    rules: [{ methods: 'POST', path: '/api/*', policies: ['rl.write'] }],
  });
}

const running: (RunningApp | OneSocket)[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    if (r instanceof OneSocket) r.close();
    else await r.close();
  }
});

const SMALL = JSON.stringify({ name: 'a small body', filler: 'x'.repeat(2_000) });
const chunked = (parts: readonly string[]) =>
  Buffer.from(`${parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`).join('')}0\r\n\r\n`);

describe.each(ADAPTERS)('%s adapter: the body of a denied request', (adapter) => {
  it('reads and drops a chunked body within the bound and answers the request pipelined behind it', async () => {
    const app = await startApp(adapter, limiter());
    running.push(app);
    const s = await OneSocket.open(app.url);
    running.push(s);
    const te = { 'transfer-encoding': 'chunked', 'content-type': 'application/json' };
    expect((await s.request('POST', '/api/items', { headers: te, body: chunked([SMALL]) })).status).toBe(201);
    // The next request goes out in the same write, right behind the denied body.
    const pipelined = 'GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n';
    const denied = await s.request('POST', '/api/items', {
      headers: te,
      body: Buffer.concat([chunked([SMALL, SMALL]), Buffer.from(pipelined)]),
    });
    expect(denied.status).toBe(429);
    expect(denied.headers.connection).not.toBe('close');
    expect((await s.next()).status).toBe(200);
    expect(s.closed).toBe(false);
    // Over the bound (64 KB) the answer closes, and says so first.
    const big = await s.request('POST', '/api/items', {
      headers: te,
      body: chunked(Array.from({ length: 40 }, () => 'y'.repeat(4096))),
    });
    expect(big.status).toBe(429);
    expect(big.headers.connection).toBe('close');
    await s.ended;
  });

  it('with deferContinue, answers a denied Expect: 100-continue without 100 Continue, an admitted one with it', async () => {
    const app = await startApp(adapter, limiter());
    running.push(app);
    deferContinue(app.server);
    const expect100 = { 'content-type': 'application/json', expect: '100-continue' };
    const first = await OneSocket.open(app.url);
    running.push(first);
    const admitted = await first.request('POST', '/api/items', {
      headers: expect100,
      body: SMALL,
      awaitContinue: true,
    });
    // Fastify parses the JSON body, so the 100 Continue goes out when it starts reading; the other test apps
    // answer without reading the body, so none does, and the connection closes after the answer.
    expect([admitted.status, admitted.interim]).toEqual([201, adapter === 'fastify' ? [100] : []]);
    const second = await OneSocket.open(app.url);
    running.push(second);
    const denied = await second.request('POST', '/api/items', {
      headers: expect100,
      body: SMALL,
      awaitContinue: true,
    });
    expect([denied.status, denied.interim]).toEqual([429, []]);
    // The body was never sent: the connection cannot carry another request, and says so.
    expect(denied.headers.connection).toBe('close');
    await second.ended;
  });
});
