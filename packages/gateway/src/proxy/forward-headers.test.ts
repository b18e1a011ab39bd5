import { describe, expect, it } from 'vitest';
import { clientResponseHeaderList } from './forward-headers.js';

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
