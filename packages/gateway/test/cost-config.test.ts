import { join } from 'node:path';
import { MemoryStore } from 'sluice/memory';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
import { GatewayLimits } from '../src/limits/gateway-limits.js';
import { tempDir } from './support.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const load = (text: string) => loadConfigText(text, join(tmp.dir, 'c.yaml'));

function yaml(endpoint: string, extra = ''): string {
  return `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 10 }
  endpoints:
    - pattern: /v1/chat/completions
      name: llm
      limit: 10000
      window: 60s
${endpoint}
${extra}`;
}

describe('cost: and count: in the configuration', () => {
  it('resolve on endpoint rules, tiers and policy classes into the rules of the limits', () => {
    const r = load(`rateLimiting:
  defaultTier: free
  tiers:
    free:
      requestsPerMinute: 60
      count: [429, 500-599]
  endpoints:
    - pattern: /v1/chat/completions
      name: llm
      limit: 10000
      window: 60s
      cost:
        json: { usage.prompt_tokens: 1, usage.completion_tokens: 3 }
        reserve: { field: max_tokens, default: 256, maxBytes: 32kb }
    - pattern: /login
      class: rl.login
    - pattern: /report/*
      name: units
      limit: 100
      window: 60s
      cost: { header: X-Upstream-Cost, keepHeader: true, fallback: 2 }
ratelimit:
  rl.login: { per_minute: 5, burst: 5, count: failed }
`);
    expect(r.ok, JSON.stringify(!r.ok && r.violations)).toBe(true);
    if (!r.ok) return;
    expect(r.config.tiers.free.count).toEqual([429, '500-599']);
    expect(r.config.endpoints[0].cost).toMatchObject({
      json: { 'usage.prompt_tokens': 1, 'usage.completion_tokens': 3 },
      reserve: { path: ['max_tokens'], default: 256, maxBytes: 32 * 1024 },
    });
    expect(r.config.endpoints[1].count).toBe('failed');
    const limits = new GatewayLimits(r.config, new MemoryStore({ sweepIntervalMs: 0 }));
    const rules = limits.options.rules;
    expect(rules.find((x) => x.name === 'tier:free')?.count).toEqual([429, '500-599']);
    expect(rules.find((x) => x.name === 'rl.login')?.count).toBe('failed');
    expect(rules.find((x) => x.name === 'units')?.settle).toEqual({
      header: 'X-Upstream-Cost',
      keepHeader: true,
      fallback: 2,
    });
    const reserve = rules.find((x) => x.name === 'llm')?.settle?.reserve as (r: unknown) => number;
    const body = (text: string) => ({ bodyForReserve: new TextEncoder().encode(text) });
    expect(reserve(body('{"model":"m","max_tokens":700}'))).toBe(700);
    expect(reserve(body('{"model":"m"}'))).toBe(256);
    expect(reserve(body('not json'))).toBe(256);
    expect(reserve({})).toBe(256);
  });

  it('refuse a negative reserve, an unknown unit, json without a path and an empty count list at their line', () => {
    const cases: [string, string, string, number][] = [
      [
        '      cost: { json: usage.total_tokens, reserve: -5 }',
        'rateLimiting.endpoints[0].cost.reserve',
        '-5',
        10,
      ],
      ['      cost: { bytes: kilobytes }', 'rateLimiting.endpoints[0].cost.bytes', 'kilobytes', 10],
      ['      cost: { json: }', 'rateLimiting.endpoints[0].cost.json', '', 10],
      ['      count: []', 'rateLimiting.endpoints[0].count', '', 10],
      ['      cost: { reserve: 10 }', 'rateLimiting.endpoints[0].cost', 'names no units', 10],
      [
        '      cost: { header: x-cost, bytes: response }',
        'rateLimiting.endpoints[0].cost.bytes',
        'takes one of header, bytes and json',
        10,
      ],
      ['      count: [599-500]', 'rateLimiting.endpoints[0].count[0]', 'write 500-599', 10],
      [
        '      cost: { bytes: response, fallback: 3 }',
        'rateLimiting.endpoints[0].cost.fallback',
        'bytes are always known',
        10,
      ],
      // A reservation above the rule's burst (10000, the limit) could never be covered: every request refused.
      [
        '      cost: { json: usage.total_tokens, reserve: 20000 }',
        'rateLimiting.endpoints[0].cost.reserve',
        'above the burst of 10000: every request would be refused; lower it or raise the burst',
        10,
      ],
      [
        '      cost: { json: usage.total_tokens, reserve: { field: max_tokens, default: 10001 } }',
        'rateLimiting.endpoints[0].cost.reserve.default',
        'above the burst of 10000',
        10,
      ],
    ];
    for (const [line, path, message, lineNo] of cases) {
      const r = load(yaml(line));
      expect(r.ok, line).toBe(false);
      if (r.ok) continue;
      const v = r.violations.find((x) => x.path === path);
      expect(v, `${line}: ${JSON.stringify(r.violations)}`).toBeDefined();
      expect(v?.message, line).toContain(message);
      expect(v?.line, line).toBe(lineNo);
    }
  });
});
