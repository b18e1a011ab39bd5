import { isSecretName, REDACTED, redactUrls } from '../config/redact.js';

/*
 * What the logger does to every line, kept cheap because request lines are logged per request: a field is
 * looked at only when it is a string that could hold a URL or a query, a secret-named field, or a plain object
 * (walked a few levels deep). Objects are copied only when something changes, so a caller's object is never
 * modified and a request line without secrets is passed through as it is.
 */

/** Paths pino redacts after serializing (an `Error` is a plain object only then): URL passwords in messages. */
export const LOG_REDACT_PATHS: readonly string[] = Object.freeze(['err.message', 'err.stack']);

const MAX_DEPTH = 4;
const secretNames = new Map<string, boolean>();

function secretName(key: string): boolean {
  let s = secretNames.get(key);
  if (s === undefined) {
    s = isSecretName(key);
    // Field names of log lines are few; the cap only guards against keys made from data.
    if (secretNames.size < 1024) secretNames.set(key, s);
  }
  return s;
}

/** A string with credentials masked; the same string when it cannot hold any. */
export function redactLogString(value: unknown): unknown {
  return typeof value === 'string' && (value.includes('://') || value.includes('='))
    ? redactUrls(value)
    : value;
}

/**
 * The fields of a log line with secret-named values replaced by `[redacted]` and URL credentials masked, at any
 * depth up to four levels of plain objects and arrays.
 *
 * @param fields - the object given to a log call.
 * @returns the same object when nothing needed redacting, else a redacted copy.
 */
export function redactLogFields(fields: Record<string, unknown>): Record<string, unknown> {
  return redactObject(fields, 0);
}

function redactObject(o: Record<string, unknown>, depth: number): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const k in o) {
    const v = o[k];
    const r = secretName(k) && isScalar(v) ? REDACTED : redactValue(v, depth);
    if (r !== v) {
      out ??= { ...o };
      out[k] = r;
    }
  }
  return out ?? o;
}

function redactValue(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return redactLogString(v);
  if (typeof v !== 'object' || v === null || depth >= MAX_DEPTH) return v;
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const r = redactValue(v[i], depth + 1);
      if (r !== v[i]) {
        out ??= [...v];
        out[i] = r;
      }
    }
    return out ?? v;
  }
  // Errors and class instances go to their serializers as they are; only plain data is walked.
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return v;
  return redactObject(v as Record<string, unknown>, depth + 1);
}

function isScalar(v: unknown): boolean {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint';
}
