import { describe, expect, it } from 'vitest';
import { definePolicy } from './policy.js';
import { SingleDecision } from './single-decision.js';

describe('SingleDecision', () => {
  it('made empty, to pass as `into`, holds an allowed decision of cost 1 and nothing taken', () => {
    const d = new SingleDecision();
    expect({
      allowed: d.allowed,
      cost: d.cost,
      delayMs: d.delayMs,
      key: d.key,
      limited: d.limited,
      reason: d.reason,
      retryAfterSeconds: d.retryAfterSeconds,
      violated: d.violated,
    }).toEqual({
      allowed: true,
      cost: 1,
      delayMs: 0,
      key: '',
      limited: false,
      reason: 'allowed',
      retryAfterSeconds: 0,
      violated: [],
    });
    expect(d.policy.name).toBe('unset');
  });

  it('made filled, equals the same decision written into an empty one', () => {
    const p = definePolicy({ name: 'p', quota: 10, window: 60, burst: 5 });
    const full = p.capacityUnits;
    const need = p.unitsPerToken;
    for (const [before, limited] of [
      [full, false],
      [need - 1, true],
    ] as const) {
      const after = limited ? before : before - need;
      const made = new SingleDecision(p, 'k', 1, before, after, limited, 0, 0);
      const into = new SingleDecision().set(p, 'k', 1, before, after, limited, 0, 0);
      expect({ ...made, outcomes: made.outcomes, reason: made.reason }).toEqual({
        ...into,
        outcomes: into.outcomes,
        reason: into.reason,
      });
    }
  });
});
