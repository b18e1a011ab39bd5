/**
 * What replay makes of one request: admitted at once, admitted after waiting in a queue, limited (429), exempt
 * (an exempt endpoint, client or tier), or refused for another reason (a request target that cannot be matched
 * safely, refused credentials, the store failing).
 */
export type ReplayOutcome = 'allowed' | 'queued' | 'limited' | 'exempt' | 'refused';

/** Counts of requests by outcome. */
export interface OutcomeCounts {
  requests: number;
  allowed: number;
  queued: number;
  limited: number;
  exempt: number;
  refused: number;
}

/** A fresh, zeroed {@link OutcomeCounts}. */
export function zeroCounts(): OutcomeCounts {
  return { requests: 0, allowed: 0, queued: 0, limited: 0, exempt: 0, refused: 0 };
}

/** True for an outcome the client saw as admitted (at once, after a wait, or exempt). */
export function admitted(o: ReplayOutcome): boolean {
  return o === 'allowed' || o === 'queued' || o === 'exempt';
}
