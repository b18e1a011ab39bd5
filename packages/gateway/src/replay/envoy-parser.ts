import { envoyDuration } from './log-duration.js';
import type { LineParser } from './log-record.js';
import { IsoTimeParser } from './log-time.js';
import { closingQuote, readRequestLine } from './request-line.js';

/**
 * The parser of Envoy's default access log format:
 *
 *     [2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http"
 *     "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80"
 *
 * The client is the first address of the quoted `X-Forwarded-For` field after the numbers (Envoy's default format
 * has no peer address); `"-"` leaves it unknown (`ip:unknown`).
 *
 * @returns a parser keeping the minute of the previous line.
 */
export function envoyParser(): LineParser {
  const time = new IsoTimeParser();
  return (s, into) => {
    if (s.charCodeAt(0) !== 91 /* [ */) return false;
    const close = s.indexOf(']', 1);
    if (close < 0) return false;
    const t = time.parse(s, 1, close);
    if (Number.isNaN(t) || s.charCodeAt(close + 1) !== 32 || s.charCodeAt(close + 2) !== 34) return false;
    const q = closingQuote(s, close + 3);
    if (q < 0 || !readRequestLine(s, close + 3, q, into)) return false;
    // The numbers (status, flags, bytes, durations) hold no quote: the next quoted field is X-Forwarded-For.
    const x0 = s.indexOf('"', q + 1);
    if (x0 < 0) return false;
    const x1 = s.indexOf('"', x0 + 1);
    if (x1 < 0) return false;
    let end = s.indexOf(',', x0 + 1);
    if (end < 0 || end > x1) end = x1;
    let start = x0 + 1;
    while (start < end && s.charCodeAt(start) === 32) start++;
    while (end > start && s.charCodeAt(end - 1) === 32) end--;
    into.timeMs = t;
    into.durationMs = envoyDuration(s, q);
    into.clientIp =
      end === start || (end === start + 1 && s.charCodeAt(start) === 45) ? undefined : s.slice(start, end);
    return true;
  };
}
