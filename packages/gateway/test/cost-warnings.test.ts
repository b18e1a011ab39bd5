import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkConfig } from '../src/config/config-warnings.js';
import { loadConfigText } from '../src/config/load-config.js';
import { tempDir } from './support.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

function codes(tierExtra: string, endpoints: string): { code: string; path: unknown }[] {
  const r = loadConfigText(
    `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 600${tierExtra} }
  endpoints:
${endpoints}`,
    join(tmp.dir, 'c.yaml'),
  );
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return checkConfig(r.config)
    .filter((f) => f.code === 'W_COST_PARALLEL')
    .map((f) => ({ code: f.code, path: f.path }));
}

const HEADER_COST = `    - pattern: /report/*
      name: units
      limit: 100
      window: 1h
      cost: { header: X-Cost }
`;

/** A cost rule whose reservation is read from the request body (`max_tokens`). */
const CHAT_RESERVE = `    - pattern: /v1/chat/*
      name: llm
      limit: 100000
      window: 1h
      cost:
        json: usage.total_tokens
        reserve: { field: max_tokens, default: 500 }
`;

describe('W_COST_PARALLEL: a cost that requests sent at once can outrun', () => {
  it('warns about a cost settled after the response with a fixed reservation and nothing bounding requests in flight', () => {
    expect(codes('', HEADER_COST)).toEqual([
      { code: 'W_COST_PARALLEL', path: ['rateLimiting', 'endpoints', 0, 'cost'] },
    ]);
  });

  it('is quiet when the tiers bound the requests in flight, or a concurrent rule covers the same pattern', () => {
    expect(codes(', concurrentRequests: 4', HEADER_COST)).toEqual([]);
    expect(
      codes('', `${HEADER_COST}    - { pattern: /report/*, name: reports-in-flight, concurrent: 2 }\n`),
    ).toEqual([]);
  });

  it('warns about a reservation read from the request body: max_tokens bounds no prompt tokens, and a usage sums them', () => {
    const path = ['rateLimiting', 'endpoints', 0, 'cost'];
    expect(codes('', CHAT_RESERVE)).toEqual([{ code: 'W_COST_PARALLEL', path }]);
    // The costs guide's own example: prompt and completion tokens weighted, reserved from max_tokens.
    expect(
      codes(
        '',
        `    - pattern: /v1/chat/completions
      name: llm-tokens
      limit: 100000
      window: 60s
      burst: 20000
      cost:
        json: { usage.prompt_tokens: 1, usage.completion_tokens: 3 }
        reserve: { field: max_tokens, default: 1024, maxBytes: 64kb }
`,
      ),
    ).toEqual([{ code: 'W_COST_PARALLEL', path }]);
  });

  it('is quiet for a reservation read from the request body when a concurrent rule bounds the same pattern', () => {
    expect(
      codes(
        '',
        `${CHAT_RESERVE}    - { pattern: /v1/chat/*, name: llm-in-flight, concurrent: 2 }
`,
      ),
    ).toEqual([]);
  });
});
