import type { Entry } from './batch-queue.js';

/**
 * Receives one decide, reserve or peek entry's part of the script's answer: the script's flag and each check's
 * units before the decision (plus, for stepped policies, their phases).
 */
export type AnswerHandler = (
  entry: Entry,
  allowed: boolean,
  units: Float64Array,
  phases: Float64Array | undefined,
) => void;

/**
 * Reads the rate-limit script's reply for `entries`, in order (the layouts are documented in lua-script.ts): one
 * integer for a single decide in the short form, one integer per decide for a batch in the short form, and the
 * general form's flags and units otherwise. Refund and reset entries are resolved here; every other entry goes to
 * `answer`.
 *
 * @returns false, with no entry handed on or resolved, when the reply has none of those shapes.
 */
export function readScriptReply(entries: readonly Entry[], reply: unknown, answer: AnswerHandler): boolean {
  // The short form: the units before the decision, or -1 minus them for a denial, per decide.
  if (typeof reply === 'number' && entries.length === 1 && entries[0].mode !== undefined) {
    shortAnswer(entries[0], reply, answer);
    return true;
  }
  if (!Array.isArray(reply)) return false;
  // Several decides in the short form: integers, where the general form starts with a '1' or '0'.
  if (typeof reply[0] === 'number' && reply.length === entries.length) {
    for (let i = 0; i < entries.length; i++) shortAnswer(entries[i], reply[i] as number, answer);
    return true;
  }
  let at = 0;
  for (const e of entries) {
    if (e.mode === undefined) {
      at++;
      e.resolve(undefined);
      continue;
    }
    const allowed = reply[at++] === '1';
    const n = e.checks.length;
    const units = new Float64Array(n);
    // Phases come only after the units of stepped policies; continuous calls allocate no array for them.
    let phases: Float64Array | undefined;
    for (let i = 0; i < n; i++) {
      units[i] = Number(reply[at++]);
      if (e.checks[i].policy.stepMs !== 0) {
        if (phases === undefined) phases = new Float64Array(n);
        phases[i] = Number(reply[at++]);
      }
    }
    answer(e, allowed, units, phases);
  }
  return true;
}

function shortAnswer(e: Entry, r: number, answer: AnswerHandler): void {
  const units = new Float64Array(1);
  units[0] = r >= 0 ? r : -1 - r;
  answer(e, r >= 0, units, undefined);
}
