import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
import { ReserveBodyScope } from '../src/limits/reserve-body-scope.js';
import { tempDir } from './support.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

function scope(text: string): ReserveBodyScope | undefined {
  const r = loadConfigText(text, join(tmp.dir, 'c.yaml'));
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return ReserveBodyScope.of(r.config);
}

const BODY_RESERVE = `cost:
        json: usage.total_tokens
        reserve: { field: max_tokens, default: 100, maxBytes: 2kb }`;

describe('which requests have their body read for a reservation', () => {
  it('none when no tier or endpoint rule reserves from the body', () => {
    expect(
      scope(`rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
  endpoints:
    - pattern: /v1/chat/*
      name: llm
      limit: 10000
      window: 60s
      cost: { json: usage.total_tokens, reserve: 500 }
`),
    ).toBeUndefined();
  });

  it('only the requests an endpoint rule that reserves from the body matches, by path and method', () => {
    const s = scope(`rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
  endpoints:
    - pattern: /v1/chat/*
      methods: [POST]
      name: llm
      limit: 10000
      window: 60s
      ${BODY_RESERVE}
    - pattern: /v1/embeddings
      methods: [GET]
      name: embed
      limit: 10000
      window: 60s
      ${BODY_RESERVE.replace('2kb', '8kb')}
    - pattern: /v1/other
      name: other
      limit: 10000
      window: 60s
`) as ReserveBodyScope;
    expect(s.maxBytes).toBe(8192);
    expect(s.wants('POST', '/v1/chat/completions')).toBe(true);
    expect(s.wants('post', '/v1/chat/completions')).toBe(true);
    expect(s.wants('PUT', '/v1/chat/completions')).toBe(false);
    expect(s.wants('POST', '/v1/other')).toBe(false);
    expect(s.wants('POST', '/v1/chatter')).toBe(false);
    // GET names HEAD too, as the rules match them.
    expect(s.wants('GET', '/v1/embeddings')).toBe(true);
    expect(s.wants('HEAD', '/v1/embeddings')).toBe(true);
    expect(s.wants('POST', '/v1/embeddings')).toBe(false);
  });

  it('every request when a tier reserves from the body (a tier applies whatever the route)', () => {
    const s = scope(`rateLimiting:
  defaultTier: free
  tiers:
    free:
      requestsPerMinute: 6000
      burstLimit: 1000
      cost:
        json: usage.total_tokens
        reserve: { field: max_tokens, default: 100, maxBytes: 2kb }
`) as ReserveBodyScope;
    expect(s.maxBytes).toBe(2048);
    expect(s.wants('POST', '/anything')).toBe(true);
  });

  it('a rule that takes its cost from a policy class reserves like the class', () => {
    const s = scope(`rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
  endpoints:
    - { pattern: /v1/chat/*, class: rl.llm }
ratelimit:
  rl.llm:
    per_minute: 10000
    burst: 10000
    cost:
      json: usage.total_tokens
      reserve: { field: max_tokens, default: 100, maxBytes: 2kb }
`) as ReserveBodyScope;
    expect(s.wants('POST', '/v1/chat/completions')).toBe(true);
    expect(s.wants('POST', '/v2/x')).toBe(false);
  });
});
