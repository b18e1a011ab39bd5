import { durationMs } from './duration.js';
import type { ConfigPath } from './violation.js';

/**
 * The resolved `cors:` section: which browser origins may call through the gateway and read its rate-limit
 * headers. The gateway answers preflights itself, so the section is the one place a browser's access is decided.
 */
export interface CorsConfig {
  /** Origins (`scheme://host[:port]`) allowed, or `['*']` for any origin (never with credentials). */
  readonly allowedOrigins: readonly string[];
  /** Sends `Access-Control-Allow-Credentials: true` (cookies and HTTP authentication cross-origin). */
  readonly credentials: boolean;
  /**
   * Every response field a page may read: the rate-limit fields and the request id header always, then the
   * `exposedHeaders` of the file.
   */
  readonly exposedHeaders: readonly string[];
  /** Methods a preflight allows; default GET, HEAD, POST, PUT, PATCH, DELETE. */
  readonly allowedMethods: readonly string[];
  /** Request fields a preflight allows; `undefined` allows the ones the preflight asks for. */
  readonly allowedHeaders: readonly string[] | undefined;
  /** How long a browser may keep a preflight's answer, in whole seconds; default 600. */
  readonly maxAgeSeconds: number;
}

/** A problem in the `cors:` section, with its path from the file's root. */
export interface CorsIssue {
  readonly path: ConfigPath;
  readonly message: string;
}

/**
 * The fields a page needs for the client SDK and the status element: without them in
 * `Access-Control-Expose-Headers` a cross-origin page sees a 429 but not when to retry or what is left.
 */
export const RATE_LIMIT_EXPOSED_HEADERS: readonly string[] = Object.freeze([
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'X-RateLimit-Policy',
]);

const DEFAULT_METHODS = Object.freeze(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);
const ORIGIN = /^https?:\/\/[^/?#\s]+$/;

// biome-ignore lint/suspicious/noExplicitAny: schema-validated YAML data, read field by field below
type Raw = Record<string, any>;

/**
 * Resolves the schema-valid `cors:` section and checks what the schema cannot: `*` with credentials (browsers
 * refuse that answer) and origins carrying a path or a trailing slash (a browser's `Origin` never has one, so
 * such an entry would never match).
 *
 * @param raw - the section as parsed, or `undefined` when the file has none (then the gateway writes no CORS field
 *   and forwards preflights like any request).
 * @param requestIdHeader - the resolved `server.requestIdHeader`, exposed too so a page can quote it.
 * @returns the frozen section (`undefined` when absent or invalid) and every issue found.
 */
export function resolveCorsConfig(
  raw: Raw | undefined,
  requestIdHeader: string,
): { config: CorsConfig | undefined; issues: CorsIssue[] } {
  const issues: CorsIssue[] = [];
  if (raw === undefined) return { config: undefined, issues };
  const origins = (raw.allowedOrigins ?? []) as string[];
  origins.forEach((o, i) => {
    if (o !== '*' && !ORIGIN.test(o)) {
      issues.push({
        path: ['cors', 'allowedOrigins', i],
        message: `allowedOrigins entries are "scheme://host[:port]" with no path or trailing slash (what a browser sends in Origin), or "*"; got ${JSON.stringify(o)}`,
      });
    }
  });
  const any = origins.includes('*');
  if (any && raw.credentials === true) {
    issues.push({
      path: ['cors', 'credentials'],
      message:
        'credentials: true cannot go with allowedOrigins "*": browsers refuse that answer; list the origins instead',
    });
  }
  const exposed: string[] = [...RATE_LIMIT_EXPOSED_HEADERS, requestIdHeader];
  for (const h of (raw.exposedHeaders ?? []) as string[]) {
    if (!exposed.some((e) => e.toLowerCase() === h.toLowerCase())) exposed.push(h);
  }
  const config: CorsConfig = Object.freeze({
    allowedOrigins: Object.freeze(any ? ['*'] : [...origins]),
    credentials: raw.credentials === true,
    exposedHeaders: Object.freeze(exposed),
    allowedMethods: Object.freeze(
      ((raw.allowedMethods as string[] | undefined) ?? DEFAULT_METHODS).map((m) => m.toUpperCase()),
    ),
    allowedHeaders:
      raw.allowedHeaders === undefined ? undefined : Object.freeze([...(raw.allowedHeaders as string[])]),
    maxAgeSeconds: Math.floor((durationMs(raw.maxAge) ?? 600_000) / 1000),
  });
  return { config: issues.length === 0 ? config : undefined, issues };
}
