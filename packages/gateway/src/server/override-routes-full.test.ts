import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { SharedOverrides } from 'sluice/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OverrideControl } from '../admission/override-control.js';
import type { Runtime } from '../admission/runtime.js';
import { createLogger } from '../log/create-logger.js';
import { serveOverrides } from './override-routes.js';

const NOW = Date.UTC(2026, 0, 1);
// Room for a few dozen rules: the threads' store refuses past it, and the admin API says so.
const store = new SharedOverrides({ bytes: 8 * 1024, wallClock: () => NOW });
const control = new OverrideControl(
  store,
  () => undefined as unknown as Runtime,
  createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() })),
  () => NOW,
);
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://admin');
    const send = (status: number, body?: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    void serveOverrides(req, res, url, control, 'ops', send);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('PUT /overrides on a full shared overrides buffer', () => {
  it('answers the overrides_full problem and keeps every rule set before it', async () => {
    let last: Response | undefined;
    let set = 0;
    for (; set < 200; set++) {
      last = await fetch(`${base}/overrides`, {
        method: 'PUT',
        body: JSON.stringify({ pattern: `tenant:t${set}`, block: 403, reason: 'abuse' }),
      });
      if (last.status !== 200) break;
    }
    expect(last?.status).toBe(507);
    expect(last?.headers.get('content-type')).toContain('application/problem+json');
    const problem = (await last?.json()) as { code: string; detail: string };
    expect(problem.code).toBe('overrides_full');
    expect(problem.detail).toMatch(/bytes/);
    const listed = (await (await fetch(`${base}/overrides`)).json()) as { overrides: { id: string }[] };
    expect(listed.overrides.map((r) => r.id)).toEqual(Array.from({ length: set }, (_, i) => `tenant:t${i}`));
  });
});
