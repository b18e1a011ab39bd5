import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileKey, ipKey, KEY_KINDS, type KeyKind } from './keys.js';
import type { HttpRequestInfo, Identity } from './types.js';

// Values chosen to collide if anything can: key words, separators, escapes, addresses.
const part = fc.constantFrom(
  'ip',
  'tenant',
  'client',
  'user',
  'apikey',
  'principal',
  'custom',
  '203.0.113.50',
  '2001:db8::1',
  'a:b',
  'a%3Ab',
  '%',
  'x',
  'ip:203.0.113.50',
  'tenant:a:client:b',
  '',
);
const maybe = fc.option(part, { nil: undefined });
const identity: fc.Arbitrary<Identity> = fc.record(
  {
    principal: maybe,
    tenant: maybe,
    client: maybe,
    user: maybe,
    apiKey: maybe,
    device: maybe,
    token: maybe,
    connection: maybe,
    agent: maybe,
    human: maybe,
    host: maybe,
  },
  { requiredKeys: [] },
);
const clientIp = fc.constantFrom(
  '203.0.113.50',
  '198.51.100.1',
  '2001:db8:1:2::7',
  '2001:db8:1:3::7',
  undefined,
);
const input = fc.record({
  kind: fc.constantFrom<KeyKind>(...KEY_KINDS),
  identity,
  webhook: maybe,
  ip: clientIp,
});

type Input = { kind: KeyKind; identity: Identity; webhook: string | undefined; ip: string | undefined };

const v = (s: unknown): string | undefined => (typeof s === 'string' && s !== '' ? s : undefined);

/** What a key stands for: the namespace actually used and the values it identifies (the reference model). */
function meaning(x: Input): unknown[] {
  const id = x.identity;
  const anon = ['ip', ipKey(x.ip)];
  const field = (name: string, value: unknown) => (v(value) === undefined ? anon : [name, v(value)]);
  const tc = v(id.tenant) && v(id.client) ? ['tenant-client', id.tenant, id.client] : undefined;
  const tu = v(id.tenant) && v(id.user) ? ['tenant-user', id.tenant, id.user] : undefined;
  const ak = v(id.apiKey) ? ['api-key', id.apiKey] : undefined;
  switch (x.kind) {
    case 'ip':
      return anon;
    case 'tenant-client':
      return tc ?? anon;
    case 'tenant-user':
      return tu ?? anon;
    case 'api-key':
      return ak ?? anon;
    case 'caller':
      return tc ?? tu ?? ak ?? anon;
    case 'device':
      return v(id.device) ? ['device', id.device] : field('token', id.token);
    case 'webhook':
      return field('webhook', x.webhook);
    default:
      return field(x.kind, id[x.kind]);
  }
}

function keyOf(x: Input): string {
  const req: HttpRequestInfo = {
    method: 'GET',
    path: '/',
    headers: {},
    remoteAddress: undefined,
    identity: x.identity,
    params: x.webhook === undefined ? {} : { webhook_id: x.webhook },
  };
  return compileKey(x.kind)(req, ipKey(x.ip), x.ip);
}

describe('bucket keys', () => {
  it('never collide across kinds or values: equal keys mean the same caller (property)', () => {
    fc.assert(
      fc.property(input, input, (a, b) => {
        if (keyOf(a) === keyOf(b)) expect(meaning(a)).toEqual(meaning(b));
        else expect(meaning(a)).not.toEqual(meaning(b));
      }),
      { numRuns: 3000, seed: 1301 },
    );
  });

  it('keep an identity whose tenant is "ip" apart from the anonymous client of that address', () => {
    const tenantIp = keyOf({
      kind: 'caller',
      identity: { tenant: 'ip', client: '203.0.113.50' },
      webhook: undefined,
      ip: '198.51.100.1',
    });
    const anonymous = keyOf({ kind: 'caller', identity: {}, webhook: undefined, ip: '203.0.113.50' });
    expect(tenantIp).toBe('tenant:ip:client:203.0.113.50');
    expect(anonymous).toBe('ip:203.0.113.50');
  });
});
