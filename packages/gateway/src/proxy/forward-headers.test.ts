import { describe, expect, it } from 'vitest';
import { clientResponseHeaderList, type ForwardFacts, upstreamRequestHeaders } from './forward-headers.js';

function pairs(list: (string | string[])[]): [string, string | string[]][] {
  const out: [string, string | string[]][] = [];
  for (let i = 0; i < list.length; i += 2) out.push([list[i] as string, list[i + 1]]);
  return out;
}

describe('clientResponseHeaderList', () => {
  it('drops hop-by-hop fields and the fields Connection names, keeps the rest with repeated values', () => {
    const list = clientResponseHeaderList(
      {
        'content-type': 'text/plain',
        connection: 'keep-alive, x-secret',
        'keep-alive': 'timeout=5',
        'transfer-encoding': 'chunked',
        'x-secret': 'hidden',
        'set-cookie': ['a=1', 'b=2'],
        'x-gone': undefined,
      },
      {},
    );
    expect(pairs(list)).toEqual([
      ['content-type', 'text/plain'],
      ['set-cookie', ['a=1', 'b=2']],
    ]);
  });

  it("appends the gateway's fields, which replace an upstream field of the same name in any case", () => {
    const list = clientResponseHeaderList(
      { 'x-request-id': 'upstream-id', ratelimit: 'upstream', 'content-length': '2', connection: 'close' },
      { 'x-request-id': 'gw-id', RateLimit: '"default";r=9;t=60', 'Retry-After': undefined },
    );
    expect(pairs(list)).toEqual([
      ['content-length', '2'],
      ['x-request-id', 'gw-id'],
      ['RateLimit', '"default";r=9;t=60'],
    ]);
  });
});

describe('upstreamRequestHeaders', () => {
  const facts = (trustedPeer: boolean): ForwardFacts => ({
    peer: '198.51.100.7',
    proto: 'http',
    host: 'api.example',
    requestId: 'r1',
    requestIdHeader: 'x-request-id',
    strip: () => false,
    preserveHost: false,
    trustedPeer,
  });
  const spoofed = {
    'x-real-ip': '1.2.3.4',
    'x-original-url': '/system/airgap/seal',
    'x-rewrite-url': '/admin',
    accept: 'text/plain',
  };

  it("sets X-Real-IP to a client's own address and drops the URL rewrite fields it sent", () => {
    const out = upstreamRequestHeaders(spoofed, facts(false));
    expect(out['x-real-ip']).toBe('198.51.100.7');
    expect(out['x-original-url']).toBeUndefined();
    expect(out['x-rewrite-url']).toBeUndefined();
    expect(out.accept).toBe('text/plain');
  });

  it('keeps what a trusted proxy in front set', () => {
    const out = upstreamRequestHeaders(spoofed, facts(true));
    expect(out['x-real-ip']).toBe('1.2.3.4');
    expect(out['x-original-url']).toBe('/system/airgap/seal');
  });
});
