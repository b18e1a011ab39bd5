import { describe, expect, it } from 'vitest';
import { compileKey, deriveKey, escapeKeyPart, KEY_KINDS, type KeyKind } from './keys.js';
import type { Identity } from './types.js';

const base = { method: 'GET', path: '/', headers: {}, remoteAddress: undefined };
const ip = '2001:db8:1:2::77';

/** Each kind with the identity (and params) it reads and the key it gives; the last column is the anonymous key. */
const TABLE: [KeyKind, Identity, Record<string, string>, string][] = [
  ['ip', { principal: 'p' }, {}, 'ip:2001:db8:1:2::/64'],
  ['principal', { principal: 'alice' }, {}, 'principal:alice'],
  ['tenant-client', { tenant: 'acme', client: 'web' }, {}, 'tenant:acme:client:web'],
  ['tenant-user', { tenant: 'acme', user: 'u1' }, {}, 'tenant:acme:user:u1'],
  ['api-key', { apiKey: 'sk_live_secret' }, {}, 'apikey:'],
  ['device', { device: 'd1', token: 't1' }, {}, 'device:d1'],
  ['connection', { connection: 'c9' }, {}, 'connection:c9'],
  ['agent', { agent: 'bot' }, {}, 'agent:bot'],
  ['webhook', {}, { webhook_id: 'wh_1' }, 'webhook:wh_1'],
  ['human', { human: 'h' }, {}, 'human:h'],
  ['host', { host: 'srv-1' }, {}, 'host:srv-1'],
  ['caller', { tenant: 'acme', client: 'web', user: 'u1', apiKey: 'k' }, {}, 'tenant:acme:client:web'],
];

describe('keys per kind', () => {
  it('cover every kind', () => {
    expect(TABLE.map(([k]) => k).sort()).toEqual([...KEY_KINDS].sort());
  });

  it.each(TABLE)('%s', (kind, identity, params, expected) => {
    const key = deriveKey(kind, { ...base, identity, params }, ip);
    expect(key.startsWith(expected)).toBe(true);
    // Anonymous callers fall back to the client IP (IPv6 by /64).
    expect(deriveKey(kind, base, ip)).toBe('ip:2001:db8:1:2::/64');
  });

  it('hash API keys and never carry the raw key', () => {
    const key = deriveKey('api-key', { ...base, identity: { apiKey: 'sk_live_secret' } }, ip);
    expect(key).toMatch(/^apikey:[A-Za-z0-9_-]{22}$/);
    expect(key).not.toContain('secret');
  });

  it('use the token id when a device id is missing', () => {
    expect(deriveKey('device', { ...base, identity: { token: 't1' } }, ip)).toBe('token:t1');
  });

  it('escape separators so values cannot forge another key', () => {
    const a = deriveKey('tenant-client', { ...base, identity: { tenant: 'x:client:y', client: 'z' } }, ip);
    const b = deriveKey('tenant-client', { ...base, identity: { tenant: 'x', client: 'y:client:z' } }, ip);
    expect(a).not.toBe(b);
    expect(escapeKeyPart('100%:a')).toBe('100%25%3Aa');
    expect(escapeKeyPart('plain')).toBe('plain');
  });

  it('support route params and functions', () => {
    expect(deriveKey({ param: 'org' }, { ...base, params: { org: 'o1' } }, ip)).toBe('param:org:o1');
    expect(
      deriveKey((req) => req.identity?.tier as string, { ...base, identity: { tier: 'gold' } }, ip),
    ).toBe('custom:gold');
    expect(deriveKey(() => undefined, base, '192.0.2.1')).toBe('ip:192.0.2.1');
    expect(deriveKey('ip', base, undefined)).toBe('ip:unknown');
  });

  it('reject invalid specs', () => {
    expect(() => compileKey('nope' as KeyKind)).toThrow(/key must be one of/);
    expect(() => compileKey({ param: '' })).toThrow(/key\.param/);
  });
});
