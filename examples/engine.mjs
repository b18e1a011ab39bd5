// The engine in one minute: `node examples/engine.mjs`. A ManualClock makes the output the same on every run.
import { Limiter, ManualClock } from 'sluice';
import { MemoryStore } from 'sluice/memory';

/** Runs the tour and returns its lines: 120 per minute in bursts of 30, then a refill. */
export async function tour() {
  const clock = new ManualClock();
  const limiter = new Limiter({
    policies: [{ name: 'rl.write', quota: 120, window: 60, burst: 30 }],
    store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    clock,
  });
  const lines = [];
  const show = async (label) => {
    const d = await limiter.decide([{ policy: 'rl.write', key: 'user:42' }]);
    const o = d.outcomes[0];
    const retry = d.allowed ? '' : ` Retry-After: ${d.retryAfterSeconds}`;
    lines.push(`${label}: ${d.allowed ? 'allow' : 'deny'} r=${o.remaining} t=${o.resetSeconds}${retry}`);
  };
  await show('first request');
  for (let i = 0; i < 28; i++) await limiter.decide([{ policy: 'rl.write', key: 'user:42' }]);
  await show('30th request');
  await show('31st request');
  clock.advance(500);
  await show('after 0.5 s');
  return lines;
}

if (process.argv[1] === new URL(import.meta.url).pathname) for (const line of await tour()) console.log(line);
