import type { Decision } from '../core/index.js';
import { disconnectSignal } from './disconnect-signal.js';
import { type IpRange, inRanges, NAMED_RANGES, parseIpRange } from './ip-address.js';
import type { HttpRequestInfo, Identity, Verdict } from './types.js';

// Parsed at the first use: Node.js compiles its IPv6 pattern on its first test (about 7 ms), a start-up cost
// that every `import` would otherwise pay, `exemptLoopback` or not.
let loopback: readonly IpRange[] | undefined;

/** Whether a client IP is a loopback address. */
export function isLoopback(ip: string): boolean {
  loopback ??= NAMED_RANGES.loopback.map((r) => parseIpRange(r) as IpRange);
  return inRanges(ip, loopback);
}

/** The admission of a request that nothing limited, without headers: one frozen object. */
export const ALLOW_NO_HEADERS: Verdict = Object.freeze({
  action: 'allow',
  status: 200,
  outcome: 'allowed',
  headers: Object.freeze([]),
});

/** The caller's tier when it is a non-empty string. */
export function tierOf(identity: Identity | undefined): string | undefined {
  const t = identity?.tier;
  return typeof t === 'string' && t !== '' ? t : undefined;
}

/** A denial that waiting can turn into an admission (a cost above the burst never can). */
export function mayWait(d: Decision): boolean {
  return !d.allowed && d.reason === 'limited';
}

/** The abort signal of what tells that the client went away: a Fetch request's own, or a response's close. */
export function signalOf(d: HttpRequestInfo['disconnect']): AbortSignal | undefined {
  if (d === undefined) return undefined;
  return 'signal' in d ? d.signal : disconnectSignal(d);
}
