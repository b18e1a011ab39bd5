import { Writable } from 'node:stream';
import { MemoryOverrides } from 'sluice/memory';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../log/create-logger.js';
import { OverrideControl, OverrideInputError } from './override-control.js';
import type { Runtime } from './runtime.js';

function control() {
  const now = Date.UTC(2026, 0, 1);
  const store = new MemoryOverrides(() => now);
  const logger = createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() }));
  return {
    store,
    control: new OverrideControl(
      store,
      () => undefined as unknown as Runtime,
      logger,
      () => now,
    ),
  };
}

async function refusal(pattern: string): Promise<OverrideInputError> {
  const { control: c, store } = control();
  const e = await c.set({ pattern, block: 403, reason: 'test' }, 'alice').catch((x: unknown) => x);
  expect(e).toBeInstanceOf(OverrideInputError);
  expect(store.snapshot().rules).toHaveLength(0);
  return e as OverrideInputError;
}

describe('OverrideControl patterns', () => {
  it.each([
    ['tenant:org:acme', 'tenant:org%3Aacme'],
    ['tenant:50%off', 'tenant:50%25off'],
    ['tennant:acme', 'tenant:acme if tennant is a typo'],
    ['user:bob', 'tenant:<t>:user:bob'],
    ['apikey:zz', 'apikey:<hash>'],
    ['foo', 'a bucket key starting with its kind'],
    // Keys of sluice/http that the gateway never makes.
    ['custom:x', 'the gateway keys no request by param: or custom:'],
    ['param:org:acme', 'the gateway keys no request by param: or custom:'],
    ['param*', 'the gateway keys no request by param: or custom:'],
    ['apikey-nme:ci-bot', 'apikey-name:ci-bot if apikey-nme is a typo'],
  ])('refuses %s as a pattern that names no request (%s)', async (pattern, message) => {
    const e = await refusal(pattern);
    expect(e.field).toBe('pattern');
    expect(e.message).toContain(message);
    expect(e.message).toContain(`got ${JSON.stringify(pattern)}`);
  });

  it.each([
    'tenant:acme',
    'tenant:acme:client:*',
    'i*',
    'ip:*',
    'ip:0.0.0.0/0',
    'principal:user%3Abob',
    // Keys with a space, a control or a non-ASCII character, written escaped.
    'tenant:acme:user:john%20doe',
    'tenant:m%C3%BCller:client:web',
    'tenant:acme:client:a%07b',
  ])('sets %s', async (pattern) => {
    const { control: c } = control();
    expect((await c.set({ pattern, block: 403, reason: 'test' }, 'alice')).pattern).toBe(pattern);
  });
});

describe('OverrideControl canonical patterns', () => {
  it.each([
    ['tenant:EPSILON', 'tenant:epsilon'],
    ['tenant:Zeta:client:*', 'tenant:zeta:client:*'],
    ['ip:198.18.60.9/24', 'ip:198.18.60.0/24'],
    ['ip:2001:DB8:60::1/64', 'ip:2001:db8:60::/64'],
  ])('stores %s as %s, and removes it by either', async (given, stored) => {
    for (const id of [given, stored]) {
      const { control: c, store } = control();
      expect((await c.set({ pattern: given, block: 403, reason: 'test' }, 'alice')).pattern).toBe(stored);
      expect((await c.remove(id, 'alice', 'done'))?.pattern).toBe(stored);
      expect(store.snapshot().rules).toHaveLength(0);
    }
  });
});

describe('OverrideControl reasons', () => {
  it('refuses a reason with control characters when setting and when removing, naming reason', async () => {
    const { control: c, store } = control();
    const set = await c
      .set({ pattern: 'ip:192.0.2.1', block: 403, reason: 'ok\r\nfake row' }, 'alice')
      .catch((x: unknown) => x);
    expect(set).toBeInstanceOf(OverrideInputError);
    expect((set as OverrideInputError).field).toBe('reason');
    expect((set as OverrideInputError).message).toContain('U+000D at character 3');
    await c.set({ pattern: 'ip:192.0.2.1', block: 403, reason: 'abuse' }, 'alice');
    const rm = await c.remove('ip:192.0.2.1', 'alice', 'done\u001b[2J').catch((x: unknown) => x);
    expect(rm).toBeInstanceOf(OverrideInputError);
    expect((rm as OverrideInputError).field).toBe('reason');
    expect(store.snapshot().rules).toHaveLength(1);
    expect((await store.history()).map((h) => h.action)).toEqual(['set']);
  });
});
