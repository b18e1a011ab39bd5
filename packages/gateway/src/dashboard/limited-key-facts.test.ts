import { readFileSync } from 'node:fs';
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

describe('the operator controls guide on the top limited keys panel', () => {
  // The panel shows each key's address or tenant and user (describeKey above); the guide that describes the
  // dashboard (moved there from the gateway README) must say so, not promise hashes only.
  const readme = readFileSync(
    new URL('../../../../docs/guide/operator-controls.md', import.meta.url),
    'utf8',
  );
  const bullet = readme
    .slice(readme.indexOf('- **Top limited keys**'), readme.indexOf('- **Top tenants'))
    .replace(/\s+/g, ' ');

  it('says the panel shows addresses and users, behind the admin token, and never tokens or API keys', () => {
    expect(bullet).not.toMatch(/never an IP address/);
    expect(bullet).toMatch(/IP address/);
    expect(bullet).toMatch(/user/);
    expect(bullet).toMatch(/admin token/);
    expect(bullet).toMatch(/never a token or an API key/);
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

describe('LimitedKeyFacts across threads', () => {
  it("ships the records of its top keys and merges another thread's, the newer record winning", async () => {
    const clock = new ManualClock(0);
    const policy = definePolicy({ name: 'p', quota: 1, window: 60, burst: 1 });
    const limiter = new Limiter({
      policies: [policy],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    });
    let now = 1_000;
    const second = new LimitedKeyFacts(
      (k) => `h(${k})`,
      'rl:',
      () => now,
    );
    const first = new LimitedKeyFacts(
      (k) => `h(${k})`,
      'rl:',
      () => now,
    );
    for (let i = 0; i < 2; i++) {
      second.recordDecision(await limiter.decide([{ policy, key: 'rl:ip:203.0.113.9' }]), {
        tier: 'free',
        rule: '',
        store: 'memory',
      });
    }
    const shipped = second.shipped([{ hash: 'h(rl:ip:203.0.113.9)' }, { hash: 'h(rl:unknown)' }]);
    expect(shipped).toEqual([
      {
        hash: 'h(rl:ip:203.0.113.9)',
        key: 'ip:203.0.113.9',
        kind: 'address',
        who: '203.0.113.9',
        tier: 'free',
        policy: 'p',
        lastSeenMs: 1000,
      },
    ]);
    expect(first.of('h(rl:ip:203.0.113.9)')).toBeUndefined();
    first.merge(shipped);
    expect(first.of('h(rl:ip:203.0.113.9)')).toMatchObject({ key: 'ip:203.0.113.9', tier: 'free' });
    // An older record changes nothing; a newer one takes over tier, policy and time.
    first.merge([{ ...shipped[0]!, tier: 'old', lastSeenMs: 500 }]);
    expect(first.of('h(rl:ip:203.0.113.9)')?.tier).toBe('free');
    now = 9_000;
    first.merge([{ ...shipped[0]!, tier: 'gold', policy: 'q', lastSeenMs: 8_000 }]);
    expect(first.of('h(rl:ip:203.0.113.9)')).toMatchObject({ tier: 'gold', policy: 'q', lastSeenMs: 8_000 });
  });
});
