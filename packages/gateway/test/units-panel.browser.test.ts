import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolPath } from '../../../test/support/tools.js';
import { openWatchedPage } from '../../../test/support/watched-page.js';
import { buildDashboard } from '../dashboard-ui/build.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const CHROMIUM = toolPath('chromium');
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'dashboard');
const TOKEN = 'dashboard-admin-token-0123456789';

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

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let t: TestGateway;
let profile: string;
let context: BrowserContext;
let page: Page;
let problems: string[] = [];

beforeAll(async () => {
  await buildDashboard();
  await mkdir(ARTIFACTS, { recursive: true });
  upstream = await startUpstream();
  upstream.handler = (req, res) => {
    req.resume();
    if (req.url?.startsWith('/files/')) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.alloc(2048));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"usage":{"total_tokens":120}}');
  };
  t = await startGateway(join(tmp.dir, 'units.yaml'), {
    yaml: YAML,
    env: { ADMIN_TOKEN: TOKEN },
    overrides: { upstream: upstream.url },
    // Real wall time: the page turns the totals of successive statuses into rates.
    now: () => Date.now(),
  });
  profile = await mkdtemp(join(tmpdir(), 'sluice-units-chromium-'));
  ({ context, page, problems } = await openWatchedPage(CHROMIUM, profile, { width: 1440, height: 900 }));
}, 60_000);

afterAll(async () => {
  await context?.close();
  await t?.gateway.close();
  await upstream?.close();
  await agent.close();
  if (profile !== undefined) await rm(profile, { recursive: true, force: true });
  tmp.cleanup();
});

describe('the dashboard units panel', () => {
  it('shows the units charged per policy, tokens and bytes, since start and per second', async () => {
    await page.goto(`${t.gateway.adminUrl}/dashboard/`);
    await page.fill('#token', TOKEN);
    await page.click('button[type=submit]');
    await page.waitForFunction(() => document.getElementById('connection')?.textContent === 'Live');
    await page.locator('#units-card').waitFor({ state: 'visible' });
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
