import type { Decision } from '../core/index.js';
import { disconnectSignal } from './disconnect-signal.js';
import type { HttpRequestInfo, Identity } from './types.js';

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
