/**
 * A runnable tour of the engine: one policy of 120 per minute with a burst of 30, a ManualClock so the output
 * is the same on every run, and the draft-11 header values each decision implies.
 */
import { Limiter, ManualClock } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';

const clock = new ManualClock();
const limiter = new Limiter({
  policies: [{ name: 'rl.write', quota: 120, window: 60, burst: 30 }],
  store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
  clock,
});

function show(label: string): void {
  const d = limiter.check('rl.write', 'user:42');
  if (d instanceof Promise) throw new Error('the memory store answers synchronously');
  const o = d.outcomes[0];
  const policy = `"${o.policy.name}";q=${o.policy.quota};w=${o.policy.window}`;
  const state = `"${o.policy.name}";r=${o.remaining};t=${o.resetSeconds}`;
  const retry = d.allowed ? '' : `  Retry-After: ${d.retryAfterSeconds}`;
  console.log(
    `${label.padEnd(28)} ${d.allowed ? 'allow' : 'DENY '}  RateLimit-Policy: ${policy}  RateLimit: ${state}${retry}`,
  );
}

show('first request');
for (let i = 0; i < 28; i++) limiter.check('rl.write', 'user:42');
show('30th request (burst used)');
show('31st request');
clock.advance(500);
show('after 0.5 s (one token back)');
clock.advance(60_000);
show('after a quiet minute');
