import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { client, send, startGateway, type TestGateway, tempDir } from './support.js';

const tmp = tempDir();
const agent = client();
let running: TestGateway | undefined;
const TOKEN = 'admin-token-0123456789';

afterAll(async () => {
  await agent.close();
  tmp.cleanup();
});
afterEach(async () => {
  await running?.gateway.close();
  running = undefined;
});

describe('the proxy listener without an upstream (decision mode)', () => {
  it('answers 502 no_upstream before admission, spending no tokens, and still serves /health', async () => {
    running = await startGateway(join(tmp.dir, 'decide.yaml'), {
      yaml: `rateLimiting:
  defaultTier: f
  tiers:
    f: { requestsPerMinute: 60, burstLimit: 2 }
decision:
  port: 0
admin:
  port: 0
  token: \${ADMIN_TOKEN}
`,
      env: { ADMIN_TOKEN: TOKEN },
    });
    const url = running.gateway.url;
    for (let i = 0; i < 4; i++) {
      const r = await send(agent, `${url}/a?i=${i}`, { headers: { 'x-request-id': `nu-${i}` } });
      expect(r.status).toBe(502);
      expect(r.json<{ code: string }>().code).toBe('no_upstream');
      expect(r.headers['x-request-id']).toBe(`nu-${i}`);
      expect(r.headers.ratelimit).toBeUndefined();
      expect(r.headers['ratelimit-policy']).toBeUndefined();
    }
    // An upgrade (WebSocket) is refused the same way, before admission.
    const { hostname, port } = new URL(url);
    const head = await new Promise<string>((resolve, reject) => {
      const s = connect(Number(port), hostname, () =>
        s.write(`GET /ws HTTP/1.1\r\nhost: ${hostname}\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n`),
      );
      let got = '';
      s.on('data', (d: Buffer) => {
        got += d.toString();
      });
      s.on('close', () => resolve(got));
      s.on('error', reject);
    });
    expect(head).toMatch(/^HTTP\/1\.1 502/);
    expect(head).toContain('no_upstream');
    expect((await send(agent, `${url}/health`)).status).toBe(200);
    const admin = running.gateway.adminUrl as string;
    const view = (
      await send(agent, `${admin}/keys/${encodeURIComponent('ip:127.0.0.1')}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      })
    ).json<{ buckets: { policy: string; remaining: number }[] }>();
    expect(view.buckets.find((b) => b.policy === 'f')?.remaining).toBe(2);
  });
});
