import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDashboard } from '../dashboard-ui/build.js';
import { EventStreamParser } from '../dashboard-ui/src/sse-parser.js';
import type { SnapshotMessage, TickMessage } from '../src/dashboard/dashboard-frame.js';
import { DASHBOARD_CSP, Dashboard } from '../src/dashboard/index.js';
import { AdminServer } from '../src/server/admin-server.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const TOKEN = 'dashboard-e2e-token-0123456789';
const auth = { authorization: `Bearer ${TOKEN}` };
const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let t: TestGateway;
let admin: string;

beforeAll(async () => {
  await buildDashboard();
  upstream = await startUpstream();
  t = await startGateway(join(tmp.dir, 'd.yaml'), {
    yaml: `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 2 }
admin:
  port: 0
  token: \${ADMIN_TOKEN}
`,
    env: { ADMIN_TOKEN: TOKEN },
    overrides: { upstream: upstream.url },
  });
  admin = t.gateway.adminUrl as string;
}, 60_000);

afterAll(async () => {
  await t?.gateway.close();
  await upstream?.close();
  await agent.close();
  tmp.cleanup();
});

/** Server-sent events of one open response, read on demand (the stream stays open between reads). */
class EventReader {
  readonly events: { event: string; data: string }[] = [];
  readonly #parser = new EventStreamParser();
  readonly #chunks: AsyncIterator<Buffer>;

  constructor(body: AsyncIterable<Buffer>) {
    this.#chunks = body[Symbol.asyncIterator]();
  }

  /** Reads until `until` holds for the events so far; false when the stream ended first. */
  async until(until: (events: { event: string; data: string }[]) => boolean): Promise<boolean> {
    while (!until(this.events)) {
      const next = await this.#chunks.next();
      if (next.done === true) return false;
      this.events.push(...this.#parser.push(next.value.toString('utf8')));
    }
    return true;
  }
}

describe('dashboard routes of the admin listener', () => {
  it('serves the page and bundle without the token, with a strict content security policy', async () => {
    const page = await send(agent, `${admin}/dashboard/`);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(DASHBOARD_CSP);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.text).toContain('<script type="module" src="app.js"></script>');
    // No other origin anywhere in the page or the bundle: it works offline.
    const js = await send(agent, `${admin}/dashboard/app.js`);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(`${page.text}${js.text}`).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
    const css = await send(agent, `${admin}/dashboard/app.css`);
    expect(css.text).toContain('.uplot');
    const again = await send(agent, `${admin}/dashboard/app.js`, {
      headers: { 'if-none-match': js.headers.etag as string },
    });
    expect(again.status).toBe(304);
    const home = await send(agent, `${admin}/dashboard`);
    expect([home.status, home.headers.location]).toEqual([303, '/dashboard/']);
    const browser = await send(agent, `${admin}/`, { headers: { accept: 'text/html' } });
    expect([browser.status, browser.headers.location]).toEqual([303, '/dashboard/']);
  });

  it('serves nothing else without the token: no path leaves the bundle folder', async () => {
    for (const path of [
      '/dashboard/../config',
      '/dashboard/%2e%2e/config',
      '/dashboard/nope.js',
      '/dashboard/events',
      '/dashboard/state',
      '/',
    ]) {
      expect((await send(agent, `${admin}${path}`)).status, path).toBe(401);
    }
    expect((await send(agent, `${admin}/dashboard/nope.js`, { headers: auth })).status).toBe(404);
    expect((await send(agent, `${admin}/dashboard/events`, { method: 'POST', headers: auth })).status).toBe(
      405,
    );
  });

  it('streams a snapshot then ticks with the seconds completed since', async () => {
    const r = await request(`${admin}/dashboard/events`, { dispatcher: agent, headers: auth });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const reader = new EventReader(r.body);
    await reader.until((e) => e.length >= 1);
    expect(reader.events[0].event).toBe('snapshot');
    const snapshot = JSON.parse(reader.events[0].data) as SnapshotMessage;
    expect(snapshot.historySeconds).toBe(300);
    expect(snapshot.status.store.kind).toBe('memory');
    expect(snapshot.status.topTenants.available).toBe(false);
    for (let i = 0; i < 3; i++) await send(agent, `${t.gateway.url}/x`);
    t.clock.advance(1000);
    const withRows = (x: { event: string; data: string }) =>
      x.event === 'tick' && (JSON.parse(x.data) as TickMessage).rows.length > 0;
    await reader.until((e) => e.some(withRows));
    const tick = JSON.parse(reader.events.find(withRows)!.data) as TickMessage;
    const requests = tick.series.find((s) => s.kind === 'requests' && s.tier === 'free')!;
    expect(tick.rows).toHaveLength(1);
    expect(tick.rows[0].v[requests.id]).toEqual([2, 1, 0]);
    expect(tick.status.topLimitedKeys).toMatchObject({
      available: true,
      items: [{ policy: 'free', count: 1 }],
    });
    r.body.destroy();
    const state = (await send(agent, `${admin}/dashboard/state`, { headers: auth })).json<SnapshotMessage>();
    expect(state.rows.at(-1)?.v[requests.id]).toEqual([2, 1, 0]);
  });

  it('bumps the configuration version after a reload, so the page fetches /config again', async () => {
    const version = async () =>
      (await send(agent, `${admin}/dashboard/state`, { headers: auth })).json<SnapshotMessage>().status
        .configVersion;
    const before = await version();
    expect(await version()).toBe(before);
    writeFileSync(t.file, readFileSync(t.file, 'utf8').replace('burstLimit: 2', 'burstLimit: 3'));
    expect((await t.gateway.reload()).ok).toBe(true);
    expect(await version()).toBe(before + 1);
  });

  it('caps open streams, ends them when the admin listener closes, and says when the bundle is missing', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'sluice-no-bundle-'));
    const g = t.gateway;
    const dashboard = new Dashboard(g, { rates: g.rates, maxStreams: 1, intervalMs: 100, assetsDir: empty });
    const server = new AdminServer(g, TOKEN, dashboard);
    const base = `http://127.0.0.1:${await server.listen('127.0.0.1', 0)}`;
    try {
      const page = await send(agent, `${base}/dashboard/`);
      expect(page.status).toBe(503);
      expect(page.text).toContain('npm run build');
      const one = await request(`${base}/dashboard/events`, { dispatcher: agent, headers: auth });
      const reader = new EventReader(one.body);
      await reader.until((e) => e.length >= 1);
      expect(dashboard.streams).toBe(1);
      expect((await send(agent, `${base}/dashboard/events`, { headers: auth })).status).toBe(503);
      const ended = reader.until(() => false).catch(() => false);
      await server.close();
      expect(await ended).toBe(false);
      expect(dashboard.streams).toBe(0);
    } finally {
      await server.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('rejects invalid options with the option named', () => {
    const g = t.gateway;
    expect(() => new Dashboard(g, { rates: {} as never })).toThrow(/rates/);
    expect(() => new Dashboard(g, { rates: g.rates, intervalMs: 5 })).toThrow(/intervalMs/);
    expect(() => new Dashboard(g, { rates: g.rates, colour: 'red' } as never)).toThrow(/colour/);
  });
});
