import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../config/gateway-config.js';
import { loadConfigText } from '../config/load-config.js';
import { fieldMap } from './json-fields.js';
import { replayReport } from './replay-report.js';
import { type ReplayLog, runReplay } from './replay-run.js';
import { renderReplayText } from './report-text.js';

function config(text: string): GatewayConfig {
  const r = loadConfigText(text, 'test.yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
}

const log = (name: string, text: string): ReplayLog => ({
  name,
  open: () => Readable.from([Buffer.from(text)]),
});

const CONFIG = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 6000, burstLimit: 1000 }
  endpoints:
    - pattern: /login
      name: login-failures
      limit: 3
      window: 60s
      count: failed
    - pattern: /files/*
      name: download-bytes
      limit: 10000
      window: 60s
      cost: { bytes: response }
    - pattern: /v1/chat/completions
      name: llm-tokens
      limit: 1000
      window: 60s
      cost: { json: usage.total_tokens, reserve: 100 }
`;

const clf = (path: string, status: number, size: string, time = '06:00:00') =>
  `203.0.113.7 - - [03/Dec/2026:${time} +0000] "POST ${path} HTTP/1.1" ${status} ${size} "-" "curl/8.5"`;

describe('sluice replay settles costs from the logs', () => {
  it('count: from the status: failed logins are counted, successful ones are free', async () => {
    const lines = [
      ...Array.from({ length: 10 }, () => clf('/login', 200, '12')),
      clf('/login', 401, '0'),
      clf('/login', 401, '0'),
      clf('/login', 401, '0'),
      clf('/login', 200, '12'),
    ];
    const run = await runReplay({
      config: { name: 'c', config: config(CONFIG) },
      logs: [log('a.log', lines.join('\n'))],
    });
    const r = replayReport(run);
    // Ten successes pass and cost nothing; three failures take the three tokens; the next login is limited.
    expect(r.totals).toMatchObject({ requests: 14, allowed: 13, limited: 1 });
  });

  it('bytes from the size field (%b, $body_bytes_sent)', async () => {
    const lines = [clf('/files/a', 200, '6000'), clf('/files/b', 200, '3000'), clf('/files/c', 200, '1')];
    const run = await runReplay({
      config: { name: 'c', config: config(CONFIG) },
      logs: [log('a.log', lines.join('\n'))],
    });
    // 6000 + 3000 charged, then 1 token for the third: 999 left, it passes; the fourth would need the refill.
    expect(replayReport(run).totals).toMatchObject({ requests: 3, allowed: 3, limited: 0 });
    const more = [...lines, clf('/files/d', 200, '5000'), clf('/files/e', 200, '5')];
    const again = await runReplay({
      config: { name: 'c', config: config(CONFIG) },
      logs: [log('a.log', more.join('\n'))],
    });
    expect(replayReport(again).totals).toMatchObject({ requests: 5, allowed: 4, limited: 1 });
  });

  it('token costs from a JSON log field, and the report says what it could not replay', async () => {
    const json = (tokens: number | undefined, second: number) =>
      JSON.stringify({
        time: `2026-12-03T06:00:${String(second).padStart(2, '0')}Z`,
        method: 'POST',
        path: '/v1/chat/completions',
        client: '203.0.113.7',
        status: 200,
        ...(tokens === undefined ? {} : { tokens }),
      });
    const lines = [json(600, 0), json(undefined, 0), json(300, 0), json(50, 0)];
    const run = await runReplay({
      config: { name: 'c', config: config(CONFIG) },
      logs: [log('a.jsonl', lines.join('\n'))],
      format: 'json',
      fields: fieldMap(['cost=tokens']),
    });
    const r = replayReport(run);
    // 600 settled; a line without its cost charges the fallback, the reservation of 100; 300 settled: nothing is
    // left for the fourth's reservation.
    expect(r.totals).toMatchObject({ requests: 4, allowed: 3, limited: 1 });
    expect(r.costs).toEqual({ replayed: false, notReplayed: { status: 0, size: 0, cost: 1 } });
    expect(renderReplayText(r)).toContain(
      'cost header or json: not replayed for 1 request whose line has no cost',
    );
  });
});
