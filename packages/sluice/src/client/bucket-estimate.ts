/**
 * What a client can honestly say about a server's token bucket from the draft-11 fields alone.
 *
 * The server sends `RateLimit-Policy: "p";q=Q;w=W` and `RateLimit: "p";r=R;t=T` where R is the whole tokens left
 * (floor) and T the seconds until the bucket is full (ceil), refilled at Q / W per second. The bucket's capacity
 * (the burst) is not in the fields and may be below or above Q, so it is inferred: each response bounds it, the
 * bounds of successive responses are intersected, and the display uses the lower bound. Every figure shown is
 * therefore one the server cannot contradict: never more left than the bucket holds, never a wait that is too
 * short for a token bucket refilled at Q / W.
 */

/** The capacity of a bucket as far as the responses tell: it holds at least `min` and at most `max` tokens. */
export interface CapacityBounds {
  readonly min: number;
  /** `Infinity` when nothing bounds it from above. */
  readonly max: number;
}

/** The facts of one response about one policy that the capacity and the waits follow from. */
export interface BucketObservation {
  /** `r`: whole tokens left after the request. */
  readonly remaining: number | undefined;
  /** `t`: seconds until the bucket is full. */
  readonly resetSeconds: number | undefined;
  /** `q`: tokens refilled per window. */
  readonly quota: number | undefined;
  /** `w`: the window in seconds. */
  readonly windowSeconds: number | undefined;
}

/** A bucket as last observed, placed on the client's clock (a `RateLimitEntry` fits). */
export interface BucketFacts {
  readonly remaining: number | undefined;
  readonly quota: number | undefined;
  readonly windowSeconds: number | undefined;
  /** The lower capacity bound. */
  readonly capacity: number | undefined;
  /** When `remaining` was observed, in milliseconds of the client's clock. */
  readonly observedAt: number;
  /** When the next request was expected to pass, from the same observation. */
  readonly nextAt: number | undefined;
  /** `observedAt + t`: when the server said the bucket is full. */
  readonly fullAt: number | undefined;
}

/** A bucket at one instant, as the client can vouch for it. */
export interface BucketView {
  /** Whole requests that pass now, at least; `undefined` before any state was seen. */
  readonly left: number | undefined;
  /** What the bucket holds when full, at least. */
  readonly capacity: number | undefined;
  /** When the next request passes, at the latest (at or before now: it passes now). */
  readonly nextAt: number | undefined;
  /** When the bucket holds its capacity, at the latest; never before `nextAt`. */
  readonly fullAt: number | undefined;
}

const isCount = (n: number | undefined): n is number => n !== undefined && Number.isSafeInteger(n) && n >= 0;

/** Integer division without the rounding a double quotient may do near a whole number. */
const intDiv = (a: number, b: number) => (a - (a % b)) / b;

/** Tokens per millisecond, when the policy says how fast it refills. */
function ratePerMs(quota: number | undefined, windowSeconds: number | undefined): number | undefined {
  if (quota === undefined || windowSeconds === undefined) return undefined;
  if (!(quota > 0 && windowSeconds > 0 && Number.isFinite(quota) && Number.isFinite(windowSeconds)))
    return undefined;
  return quota / (windowSeconds * 1000);
}

/**
 * The capacity bounds one response implies. With `t` the ceiling of the fill time at `q / w` per second and `r`
 * the floor of the tokens: `(t - 1) q / w < B - tokens <= t q / w` and `r <= tokens < r + 1`, so
 * `r + (t - 1) q / w < B < r + 1 + t q / w` for a whole capacity B (the lower side only when `r >= 1`: a server
 * that lets a bucket owe tokens reports `r = 0` below zero). `t = 0` means full, so B = r. Without a window only
 * `B >= r + 1` (not full) is known. The quota does not bound the capacity: a burst may exceed it, and an `r`
 * above `q` says so.
 *
 * @returns the bounds, or `undefined` when the response gave no `r`.
 */
export function observeCapacity(o: BucketObservation): CapacityBounds | undefined {
  if (!isCount(o.remaining)) return undefined;
  const r = o.remaining;
  const t = o.resetSeconds;
  let min = Math.max(1, r);
  let max = Number.POSITIVE_INFINITY;
  if (t === 0 && r >= 1) {
    min = r;
    max = r;
  } else if (t !== undefined && t > 0) {
    min = r + 1;
    const q = o.quota;
    const w = o.windowSeconds;
    // Exact in integers: B w < (r + 1) w + t q, and B w > r w + (t - 1) q.
    if (
      isCount(t) &&
      isCount(q) &&
      isCount(w) &&
      q > 0 &&
      w > 0 &&
      (r + 1) * w + t * q < Number.MAX_SAFE_INTEGER
    ) {
      if (r >= 1) min = Math.max(min, intDiv(r * w + (t - 1) * q, w) + 1);
      max = intDiv((r + 1) * w + t * q - 1, w);
    }
  }
  // No cap at q: Sluice accepts a burst above the quota per window (quota 10 with bursts of 50), and r and t bound
  // the capacity on their own. Only a server contradicting itself gets min above max; the upper bound is safer.
  if (min > max) min = max;
  return { min, max };
}

/**
 * Intersects what was known with what a response says. Bounds that exclude each other mean the policy changed
 * (a reload with another burst), so the new response alone counts.
 */
export function mergeCapacity(known: CapacityBounds | undefined, seen: CapacityBounds): CapacityBounds {
  if (known === undefined) return seen;
  const min = Math.max(known.min, seen.min);
  const max = Math.min(known.max, seen.max);
  return min <= max ? { min, max } : seen;
}

/**
 * How long after a response the next request passes, at the latest: at once with `r >= 1`; with `r = 0`, the time
 * one token takes (`w / q`, the tokens left are at least 0), or `t` (a full bucket holds a token), or a 429's
 * Retry-After (the server's exact figure), whichever is shortest.
 *
 * @param retryAfterSeconds - the Retry-After of a 429 only: other statuses' Retry-After is not about the bucket.
 * @returns milliseconds, or `undefined` when nothing tells.
 */
export function nextPassDelayMs(o: BucketObservation, retryAfterSeconds?: number): number | undefined {
  if (!isCount(o.remaining)) return undefined;
  if (o.remaining >= 1) return 0;
  let wait = Number.POSITIVE_INFINITY;
  const rate = ratePerMs(o.quota, o.windowSeconds);
  if (rate !== undefined) wait = Math.ceil(1 / rate);
  if (o.resetSeconds !== undefined && o.resetSeconds >= 0) wait = Math.min(wait, o.resetSeconds * 1000);
  if (retryAfterSeconds !== undefined && retryAfterSeconds >= 0)
    wait = Math.min(wait, retryAfterSeconds * 1000);
  return Number.isFinite(wait) ? wait : undefined;
}

/**
 * The bucket at `now` from its last observation: the tokens known then, refilled at `q / w` since, capped at the
 * known capacity. After `r = 0` the count starts at one token at `nextAt`. The bucket counts as full once the
 * server's `t` has passed or the refilled count reaches the known capacity, whichever comes first, so "full" and
 * "capacity of capacity left" always appear together.
 *
 * @param facts - the entry.
 * @param now - the client's clock reading.
 */
export function bucketAt(facts: BucketFacts, now: number): BucketView {
  const capacity = isCount(facts.capacity) && facts.capacity >= 1 ? facts.capacity : undefined;
  if (!isCount(facts.remaining))
    return { left: undefined, capacity, nextAt: undefined, fullAt: facts.fullAt };
  const r = facts.remaining;
  const rate = ratePerMs(facts.quota, facts.windowSeconds);
  let nextAt = r >= 1 ? facts.observedAt : facts.nextAt;
  let fullAt = facts.fullAt;
  // A full bucket admits a request, so a (hand-made) entry whose next is after its full is read as full then.
  if (nextAt !== undefined && fullAt !== undefined && fullAt < nextAt) nextAt = fullAt;
  let baseTokens = r;
  let baseAt = facts.observedAt;
  if (r === 0 && nextAt !== undefined) {
    baseTokens = 1;
    baseAt = nextAt;
  }
  if (rate !== undefined && capacity !== undefined && fullAt !== undefined) {
    fullAt = Math.min(fullAt, Math.ceil(baseAt + Math.max(0, capacity - baseTokens) / rate));
  }
  let left: number;
  if (capacity !== undefined && fullAt !== undefined && now >= fullAt) {
    left = capacity;
  } else {
    const tokens = now < baseAt ? r : baseTokens + (rate === undefined ? 0 : (now - baseAt) * rate);
    left = Math.max(0, Math.floor(tokens));
    if (capacity !== undefined) left = Math.min(capacity, left);
  }
  return { left, capacity, nextAt, fullAt };
}
