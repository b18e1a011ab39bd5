import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isSecretName,
  REDACTED,
  redactConfig,
  redactText,
  redactUrls,
  secretsIn,
} from '../src/config/redact.js';
import { createLogger } from '../src/log/create-logger.js';

describe('redactUrls', () => {
  it('masks the password of a URL and keeps the user, host and path', () => {
    expect(redactUrls('redis://alice:S3cret@10.0.0.5:6379/0')).toBe('redis://alice:***@10.0.0.5:6379/0');
    expect(redactUrls('rediss://:S3cret@h:6380')).toBe('rediss://:***@h:6380');
    expect(redactUrls('https://ghp_token123@example.com/x')).toBe('https://***@example.com/x');
    // An unencoded "@" inside the password: everything up to the last "@" of the authority is user info.
    expect(redactUrls('redis://u:p@ss@host:1')).toBe('redis://u:***@host:1');
    expect(redactUrls('got "redis://a:b@c:1", expected x')).toBe('got "redis://a:***@c:1", expected x');
    expect(redactUrls('redis://h:1/0?password=S3cret&db=1')).toBe('redis://h:1/0?password=***&db=1');
  });

  it('leaves text without credentials alone', () => {
    for (const s of ['http://127.0.0.1:8080/x?y=1', 'user@example.com', 'no url here', 'redis://h:1/a@b'])
      expect(redactUrls(s)).toBe(s);
  });

  it('never lets a password through, whatever it holds (property)', () => {
    const password = fc
      .stringMatching(/^[A-Za-z0-9!$&'()*+,;=:@%._~-]{4,24}$/)
      .filter((p) => /[A-Za-z0-9]{4}/.test(p));
    fc.assert(
      fc.property(fc.constantFrom('redis', 'rediss', 'http', 'https'), password, (scheme, pw) => {
        const out = redactUrls(`${scheme}://user:${pw}@host.example:6379/0 and more`);
        expect(out).toBe(`${scheme}://user:***@host.example:6379/0 and more`);
      }),
      { numRuns: 200 },
    );
  });
});

describe('isSecretName', () => {
  it('knows passwords, secrets, tokens, API keys and private keys, and nothing else', () => {
    for (const n of [
      'password',
      'token',
      'secret',
      'apiKey',
      'api_key',
      'jwtSecret',
      'privateKey',
      'clientSecret',
    ])
      expect(isSecretName(n), n).toBe(true);
    for (const n of ['apiKeys', 'keys', 'key', 'prefix', 'header', 'url', 'tokens', 'file', 'maxTrackedKeys'])
      expect(isSecretName(n), n).toBe(false);
  });
});

describe('redactConfig', () => {
  it('replaces secret fields and URL passwords, and copies everything else', () => {
    const config = Object.freeze({
      admin: { host: '127.0.0.1', port: 9091, token: 'admin-token-0123456789' },
      store: {
        redis: {
          url: 'redis://default:RedisPw0001@127.0.0.1:6379',
          sentinel: { name: 'm', nodes: ['h:1'], password: 'SentinelPw01' },
        },
      },
      upstream: { url: 'http://svc:UpPw0001@127.0.0.1:3000' },
      quota: { webhook: { url: 'https://hooks.example/x', secret: 'webhook-secret-0123' } },
      identity: {
        apiKeys: { file: '/etc/keys.yaml', header: 'x-api-key' },
        jwt: { jwtSecret: 'hs256-secret' },
      },
      jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0LWtleS1tYXRlcmlhbA', kid: 'one' }] },
      pem: '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n',
      missing: { token: undefined },
      flags: { requireToken: true },
      tiers: { token: { perMinute: 5 } },
    });
    const out = redactConfig(config) as typeof config;
    expect(out.admin).toEqual({ host: '127.0.0.1', port: 9091, token: REDACTED });
    expect(out.store.redis.url).toBe('redis://default:***@127.0.0.1:6379');
    expect(out.store.redis.sentinel).toEqual({ name: 'm', nodes: ['h:1'], password: REDACTED });
    expect(out.upstream.url).toBe('http://svc:***@127.0.0.1:3000');
    expect(out.quota.webhook).toEqual({ url: 'https://hooks.example/x', secret: REDACTED });
    expect(out.identity.apiKeys).toEqual({ file: '/etc/keys.yaml', header: 'x-api-key' });
    expect(out.identity.jwt.jwtSecret).toBe(REDACTED);
    expect(out.jwks.keys[0]).toEqual({ kty: 'oct', k: REDACTED, kid: 'one' });
    expect(out.pem).toBe(REDACTED);
    expect(out.missing.token).toBeUndefined();
    // A flag is never a secret, and a tier named "token" is a mapping, shown as it is.
    expect(out.flags.requireToken).toBe(true);
    expect(out.tiers.token).toEqual({ perMinute: 5 });
    const text = JSON.stringify(out);
    for (const s of [
      'admin-token-0123456789',
      'RedisPw0001',
      'SentinelPw01',
      'UpPw0001',
      'webhook-secret-0123',
    ])
      expect(text).not.toContain(s);
  });
});

describe('secretsIn and redactText', () => {
  it('collects the secret values of raw data and scrubs them from any text', () => {
    const raw = {
      admin: { token: 'tinyTok9' },
      store: { url: 'redis://u:UrlPw0001@h:1', sentinel: { password: 123456 } },
      tiers: { token: { requestsPerMinute: 5 } },
    };
    const secrets = secretsIn(raw);
    expect(secrets).toEqual(expect.arrayContaining(['tinyTok9', 'UrlPw0001', '123456']));
    expect(redactText('given tinyTok9 and 123456 and redis://u:UrlPw0001@h:1', secrets)).toBe(
      `given ${REDACTED} and ${REDACTED} and redis://u:***@h:1`,
    );
    // Short values are not scrubbed from free text (they would mangle it); their own fields redact them.
    expect(secretsIn({ token: 'ab1' })).toEqual([]);
  });
});

describe('the gateway logger', () => {
  it('redacts secret fields, URL passwords in fields and error messages, and messages built from configuration', () => {
    const lines: string[] = [];
    const logger = createLogger('info', { write: (s: string) => void lines.push(s) });
    logger.info(
      {
        upstream: 'http://svc:UpPw0001@127.0.0.1:3000',
        admin: { token: 'admin-token-0123456789' },
        password: 'TopPw0001',
        store: { redis: { url: 'redis://u:RedisPw0001@h:1' } },
        err: new Error('connect to redis://u:RedisPw0001@h:1 failed'),
      },
      'starting with redis://u:RedisPw0001@h:1',
    );
    logger.error('invalid configuration: got "redis://a:MsgPw0001@h"');
    logger.info({ url: '/api/x?y=1', reqId: 'r1' }, 'request');
    const text = lines.join('');
    for (const s of ['UpPw0001', 'admin-token-0123456789', 'TopPw0001', 'RedisPw0001', 'MsgPw0001'])
      expect(text).not.toContain(s);
    const [first, second, third] = lines.map((l) => JSON.parse(l));
    expect(first).toMatchObject({
      upstream: 'http://svc:***@127.0.0.1:3000',
      admin: { token: REDACTED },
      password: REDACTED,
      store: { redis: { url: 'redis://u:***@h:1' } },
      err: { message: 'connect to redis://u:***@h:1 failed' },
      msg: 'starting with redis://u:***@h:1',
    });
    expect(second.msg).toBe('invalid configuration: got "redis://a:***@h"');
    expect(third).toMatchObject({ url: '/api/x?y=1', reqId: 'r1', msg: 'request' });
  });
});
