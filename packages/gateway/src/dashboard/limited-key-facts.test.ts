import { definePolicy, Limiter, ManualClock } from 'sluice';
import { MemoryStore } from 'sluice/memory';
import { describe, expect, it } from 'vitest';
import { describeKey, LimitedKeyFacts } from './limited-key-facts.js';

describe('describeKey', () => {
  it.each([
    ['tenant:acme:client:web', 'tenant-client', 'acme / web'],
    ['tenant:a%3Ab:user:u1', 'tenant-user', 'a:b / u1'],
    ['ip:203.0.113.9', 'address', '203.0.113.9'],
    ['ip:2001:db8::/64', 'address', '2001:db8::/64'],
    ['apikey:abc', 'api-key', 'abc'],
    ['principal:alice', 'principal', 'alice'],
    ['plain', 'custom', 'plain'],
  ])('%s is %s %s', (key, kind, who) => {
    expect(describeKey(key)).toEqual({ kind, who });
  });
});

describe('LimitedKeyFacts', () => {
  it('records denials only, without the prefix, joined by the top list hash; updates a known key in place', async () => {
    const clock = new ManualClock(0);
    let now = 1_000;
    const policy = definePolicy({ name: 'p', quota: 1, window: 60, burst: 1 });
    const limiter = new Limiter({
      policies: [policy],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    });
    const facts = new LimitedKeyFacts(
      (k) => `h(${k})`,
      'rl:',
      () => now,
    );
    const decide = () => limiter.check('p', 'rl:tenant:t:client:c') as ReturnType<typeof limiter.decide>;
    facts.recordDecision(await decide(), { tier: 'gold', rule: '', store: 'memory' });
    expect(facts.of('h(rl:tenant:t:client:c)')).toBeUndefined();
    facts.recordDecision(await decide(), { tier: 'gold', rule: '', store: 'memory' });
    const f = facts.of('h(rl:tenant:t:client:c)');
    expect(f).toMatchObject({
      key: 'tenant:t:client:c',
      kind: 'tenant-client',
      who: 't / c',
      tier: 'gold',
      policy: 'p',
      lastSeenMs: 1000,
    });
    now = 5_000;
    facts.recordDecision(await decide(), { tier: 'silver', rule: '', store: 'memory' });
    expect(facts.of('h(rl:tenant:t:client:c)')).toBe(f);
    expect(f).toMatchObject({ tier: 'silver', lastSeenMs: 5000 });
  });
});
