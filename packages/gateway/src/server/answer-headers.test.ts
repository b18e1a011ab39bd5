import type { HeaderPair } from 'sluice/http';
import { describe, expect, it } from 'vitest';
import type { Runtime } from '../admission/runtime.js';
import { admittedHeaders } from './answer-headers.js';

const rt = { config: { server: { requestIdHeader: 'x-request-id' } } } as unknown as Runtime;

describe('admittedHeaders', () => {
  it('lists the request id, then the rate-limit fields of an allowed request, as name and value in turn', () => {
    const headers: HeaderPair[] = [
      ['RateLimit-Policy', '"t";q=10;w=60'],
      ['RateLimit', '"t";r=9;t=60'],
    ];
    const list = admittedHeaders(rt, 'id-1', {
      kind: 'allow',
      outcome: 'allowed',
      headers,
      decision: undefined,
      tier: 't',
      key: 'ip:1',
      observer: undefined,
      rules: undefined,
    });
    expect(list).toEqual([
      'x-request-id',
      'id-1',
      'RateLimit-Policy',
      '"t";q=10;w=60',
      'RateLimit',
      '"t";r=9;t=60',
    ]);
  });

  it('lists the request id alone for an exempt request, and a rate-limit field named as the id replaces it', () => {
    const exempt = admittedHeaders(rt, 'id-2', {
      kind: 'exempt',
      reason: 'endpoint',
      outcome: 'exempt_endpoint',
      tier: undefined,
    });
    expect(exempt).toEqual(['x-request-id', 'id-2']);
    const clash = admittedHeaders(rt, 'id-3', {
      kind: 'allow',
      outcome: 'allowed',
      headers: [['x-request-id', 'other']],
      decision: undefined,
      tier: 't',
      key: 'ip:1',
      observer: undefined,
      rules: undefined,
    });
    expect(clash).toEqual(['x-request-id', 'other']);
  });
});
