import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toolPath } from '../../../test/support/tools.js';
import { ARTIFACTS, dashboardSuite, openPanel } from './dashboard-suite.js';
import { send } from './support.js';

const CHROMIUM = toolPath('chromium');

const YAML = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60000, burstLimit: 10000 }
  endpoints:
    - pattern: /v1/chat/completions
      name: llm-tokens
      limit: 100000
      window: 60s
      cost: { json: usage.total_tokens, reserve: 100 }
    - pattern: /files/*
      name: download-bytes
      limit: 100000000
      window: 60s
      cost: { bytes: response }
admin:
  port: 0
  token: \${ADMIN_TOKEN}
`;

const suite = dashboardSuite({
  chromium: CHROMIUM,
  name: 'units',
  yaml: YAML,
  handler: (req, res) => {
    req.resume();
    if (req.url?.startsWith('/files/')) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.alloc(2048));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"usage":{"total_tokens":120}}');
  },
});
const { agent } = suite;

describe('the dashboard units panel', () => {
  it('shows the units charged per policy, tokens and bytes, since start and per second', async () => {
    const { page, t, problems } = suite;
    await openPanel(page, `${t.gateway.adminUrl}/dashboard/`, '#units-card');
    for (let i = 0; i < 3; i++) {
      expect(
        (await send(agent, `${t.gateway.url}/v1/chat/completions`, { method: 'POST', body: '{}' })).status,
      ).toBe(200);
    }
    expect((await send(agent, `${t.gateway.url}/files/a.bin`)).status).toBe(200);
    await page.waitForFunction(
      () => (document.querySelectorAll('#units tbody tr').length ?? 0) === 2,
      undefined,
      { timeout: 15_000 },
    );
    const rows = await page.locator('#units tbody tr').allTextContents();
    expect(rows.map((r) => r.replace(/\s+/g, ' ').trim())).toEqual([
      expect.stringMatching(/^download-bytes\s*bytes\s*2,?048/),
      expect.stringMatching(/^llm-tokens\s*tokens\s*360/),
    ]);
    await page.locator('#units-card').screenshot({ path: join(ARTIFACTS, 'units-panel.png') });
    expect(problems).toEqual([]);
  });
});
