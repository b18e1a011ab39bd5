import type { LineParser, LogRecord } from './log-record.js';
import { epochMs, IsoTimeParser } from './log-time.js';

/** Outcomes of the gateway's request lines that never reached admission: health endpoints, CORS preflights. */
const NOT_ADMITTED = new Set(['own', 'preflight']);

/**
 * The parser of the gateway's own request log (`sluice serve` with `log.level: info`): pino JSON lines with
 * `msg: "request"`, `time`, `method`, `url`, `key` and `tier`. The key names the caller as admission keyed it
 * (`ip:<address>`, `tenant:<t>:client:<c>`, `tenant:<t>:user:<u>`, `apikey:<hash>`), which is turned back into the
 * identity, so a replay keys each request as the gateway did. The gateway's other lines (start, reload) and
 * requests it answered itself (health endpoints, preflights) are skipped.
 */
export function gatewayLogParser(): LineParser {
  const time = new IsoTimeParser();
  return (s, into) => {
    if (s.charCodeAt(0) !== 123) return false;
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(s) as Record<string, unknown>;
    } catch {
      return false;
    }
    if (o === null || typeof o !== 'object') return false;
    if (o.msg !== 'request') return typeof o.msg === 'string' ? 'skip' : false;
    if (typeof o.outcome === 'string' && NOT_ADMITTED.has(o.outcome)) return 'skip';
    const t =
      typeof o.time === 'number'
        ? epochMs(o.time)
        : typeof o.time === 'string'
          ? time.parse(o.time)
          : Number.NaN;
    if (Number.isNaN(t) || typeof o.url !== 'string' || typeof o.method !== 'string') return false;
    into.timeMs = t;
    into.method = o.method;
    into.target = o.url;
    if (typeof o.key === 'string') readKey(o.key, into);
    // The tier counts with an identity (an anonymous caller's line names the default tier anyway), and alone on a
    // line without a key: a caller of an unlimited tier, exempt before any bucket was keyed.
    if (typeof o.tier === 'string' && (into.identified || o.key === undefined)) into.tier = o.tier;
    return true;
  };
}

/**
 * Turns a bucket key back into the caller: `ip:` gives the address, the others the identity.
 *
 * @param key - the key as logged (without the key prefix).
 * @param into - the record.
 */
export function readKey(key: string, into: LogRecord): void {
  if (key.startsWith('ip:')) {
    const ip = key.slice(3);
    // An IPv6 client is keyed by its /64: the network's first address stands for it.
    into.clientIp = ip === 'unknown' ? undefined : ip.endsWith('/64') ? ip.slice(0, -3) : ip;
    return;
  }
  if (key.startsWith('apikey:')) {
    into.apiKeyHash = key.slice(7);
    return;
  }
  const parts = key.split(':').map(unescapePart);
  if (parts.length === 4 && parts[0] === 'tenant' && parts[2] === 'user') {
    into.tenant = parts[1];
    into.user = parts[3];
  } else if (parts.length === 4 && parts[0] === 'tenant' && parts[2] === 'client') {
    into.tenant = parts[1];
    into.client = parts[3];
  } else if (parts.length === 2) {
    into.tenant = parts[0];
    into.client = parts[1];
  } else {
    // A key of another kind (a class keyed by principal, device...): one caller per key is what matters.
    into.user = key;
  }
}

function unescapePart(p: string): string {
  if (!p.includes('%')) return p;
  try {
    return decodeURIComponent(p);
  } catch {
    return p;
  }
}
