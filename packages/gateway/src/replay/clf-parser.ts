import { clfDuration, type DurationUnit } from './log-duration.js';
import type { LineParser } from './log-record.js';
import { ClfTimeParser } from './log-time.js';
import { closingQuote, isStatus, readRequestLine } from './request-line.js';
import { sizeAt, statusAt } from './response-facts.js';

/**
 * The parser of NGINX's and Apache's `combined` and `common` formats, which differ only by the referer and user
 * agent after the byte count (ignored here):
 *
 *     203.0.113.9 - frank [10/Oct/2000:13:55:36 -0700] "GET /a?b=1 HTTP/1.1" 200 2326 "http://r/" "curl/8"
 *
 * The client is the first field (NGINX `$remote_addr`: behind a load balancer, log `$realip_remote_addr` or use
 * the real IP module so the first field is the client). A line without a readable time, request line and status is
 * not a request of this format (a truncated or foreign line). No regular expression: the fields are found with
 * `indexOf`, so a hostile line costs time linear in its length.
 *
 * A number after the fixed fields is the request's duration (NGINX `$request_time`, Apache `%D` or `%T`).
 *
 * @param durationUnit - the unit of a whole-number duration: microseconds (Apache `%D`) unless named.
 * @returns a parser keeping the day of the previous line.
 */
export function clfParser(durationUnit: DurationUnit = 'us'): LineParser {
  const time = new ClfTimeParser();
  return (s, into) => {
    const sp = s.indexOf(' ');
    if (sp <= 0) return false;
    const open = s.indexOf(' [', sp);
    if (open < 0) return false;
    const t = time.parse(s, open + 2);
    const close = open + 28;
    if (Number.isNaN(t) || s.charCodeAt(close) !== 93 /* ] */) return false;
    if (s.charCodeAt(close + 1) !== 32 || s.charCodeAt(close + 2) !== 34 /* " */) return false;
    const q = closingQuote(s, close + 3);
    if (q < 0 || !isStatus(s, q + 2) || s.charCodeAt(q + 1) !== 32) return false;
    if (!readRequestLine(s, close + 3, q, into)) return false;
    into.timeMs = t;
    into.clientIp = sp === 1 && s.charCodeAt(0) === 45 /* - */ ? undefined : s.slice(0, sp);
    into.durationMs = clfDuration(s, q + 5, durationUnit);
    // The status and the body size, for costs settled from the response (`count:`, `cost: { bytes }`).
    into.status = statusAt(s, q + 2);
    into.bytes = s.charCodeAt(q + 5) === 32 ? sizeAt(s, q + 6) : -1;
    return true;
  };
}

/**
 * Which of the two NGINX/Apache formats a line the parser read is in: `combined` ends with the quoted user agent
 * (after the quoted referer), `common` with the byte count. Called once per log, on the line its format was chosen
 * from, not per line.
 *
 * @param line - a line {@link clfParser} read.
 */
export function clfVariant(line: string): 'combined' | 'common' {
  let end = line.length;
  while (end > 0 && line.charCodeAt(end - 1) <= 32) end--;
  if (line.charCodeAt(end - 1) !== 34 /* " */) return 'common';
  // The closing quote of the user agent, and at least one more quoted field before it after the request line.
  const open = line.lastIndexOf('"', end - 2);
  return open > 0 && line.lastIndexOf('"', open - 1) > line.indexOf('"') ? 'combined' : 'common';
}
