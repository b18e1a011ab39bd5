import type { FieldMap } from './json-fields.js';
import { pick } from './json-fields.js';
import { jsonDuration } from './log-duration.js';
import type { LineParser, LogRecord } from './log-record.js';
import { AnyTimeParser } from './log-time.js';
import { readRequestLine } from './request-line.js';
import { sizeOf, statusOf } from './response-facts.js';

const text = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;

/**
 * The parser of JSON access logs, one object a line, with the facts found through a {@link FieldMap}: the time
 * (ISO text, NGINX time, or epoch seconds or milliseconds), the method and path or a whole request line, the
 * client address and, when mapped, the caller (tenant, application, user, tier, API key hash) and the cost. A line
 * that is not an object, or has no time or path, is not a request of this format.
 *
 * @param fields - where the facts are.
 */
export function jsonParser(fields: FieldMap): LineParser {
  const time = new AnyTimeParser();
  return (s, into) => {
    if (s.charCodeAt(0) !== 123 /* { */) return false;
    let o: unknown;
    try {
      o = JSON.parse(s);
    } catch {
      return false;
    }
    return readJsonRequest(o, fields, time, into);
  };
}

/**
 * Fills a record from one parsed JSON line.
 *
 * @returns false when the object lacks a readable time or request target.
 */
export function readJsonRequest(o: unknown, fields: FieldMap, time: AnyTimeParser, into: LogRecord): boolean {
  if (o === null || typeof o !== 'object') return false;
  const t = time.parse(pick(o, fields.time));
  if (Number.isNaN(t)) return false;
  const path = text(pick(o, fields.path));
  if (path !== undefined && path.charCodeAt(0) === 47) {
    into.target = path;
    const m = text(pick(o, fields.method));
    into.method = m === undefined ? 'GET' : m.toUpperCase();
  } else {
    const line = text(pick(o, fields.request));
    if (line === undefined || !readRequestLine(line, 0, line.length, into)) return false;
  }
  into.timeMs = t;
  into.clientIp = text(pick(o, fields.client));
  into.tenant = text(pick(o, fields.tenant));
  into.client = text(pick(o, fields.app));
  into.user = text(pick(o, fields.user));
  into.tier = text(pick(o, fields.tier));
  into.apiKeyHash = text(pick(o, fields.apikey));
  into.durationMs = jsonDuration(o, fields.duration, pick, fields.durationUnit);
  into.status = statusOf(pick(o, fields.status));
  into.bytes = sizeOf(pick(o, fields.bytes));
  const cost = pick(o, fields.cost);
  if (cost === undefined) return true;
  // A cost that is no whole number of tokens the engine can count makes the line unreadable, not free.
  const n = typeof cost === 'string' ? Number(cost) : cost;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) return false;
  into.cost = n;
  into.costLogged = true;
  return true;
}
