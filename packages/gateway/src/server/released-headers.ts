import { type Decision, type PolicyOutcome, plainDecision } from 'sluice';
import { formatDecisionHeaders, type HeaderPair } from 'sluice/http';

/** The fields whose values follow the buckets' levels; RateLimit-Policy and the rest stay as admission set them. */
const LEVELS: ReadonlySet<string> = new Set([
  'ratelimit',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'x-ratelimit-policy',
]);

/**
 * The rate-limit headers of an admitted request that is refused after all (shed under overload) and so gave its
 * concurrency slots back: the same headers, with the slots counted free again, so that the answer describes the
 * buckets as they are once it is given (D-G185). Headers without a concurrency policy, or of a request that took no
 * slot (a store that could not decide), are returned as they are.
 *
 * @param headers - the admitted request's headers, in the configured mode.
 * @param d - its decision.
 * @param nowMs - wall-clock milliseconds, for `X-RateLimit-Reset`.
 */
export function releasedHeaders(
  headers: readonly HeaderPair[],
  d: Decision | undefined,
  nowMs: number,
): readonly HeaderPair[] {
  if (d === undefined || d.reason !== 'allowed' || !d.outcomes.some((o) => o.policy.concurrent > 0))
    return headers;
  const outcomes: PolicyOutcome[] = d.outcomes.map((o) =>
    o.policy.concurrent > 0 ? { ...o, remaining: Math.min(o.policy.burst, o.remaining + d.cost) } : o,
  );
  const after = plainDecision(d, { outcomes });
  const levels = formatDecisionHeaders(after, { mode: 'both', nowMs }).filter((p) =>
    LEVELS.has(p[0].toLowerCase()),
  );
  const out: HeaderPair[] = [];
  let placed = false;
  for (const pair of headers) {
    const name = pair[0].toLowerCase();
    if (!LEVELS.has(name)) out.push(pair);
    else if (!placed) {
      // The fields present in the configured mode, at the place of the first of them.
      placed = true;
      for (const p of levels) if (headers.some((h) => h[0].toLowerCase() === p[0].toLowerCase())) out.push(p);
    }
  }
  return out;
}
