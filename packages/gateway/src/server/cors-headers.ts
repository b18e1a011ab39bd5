import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { CorsConfig } from '../config/cors-config.js';

/*
 * The CORS fields of the proxy listener, from the `cors:` section in effect. A page of another origin reads the
 * rate-limit fields only when they are listed in Access-Control-Expose-Headers, on every answer: a 429 without
 * them is a refusal the page cannot schedule a retry for.
 */

interface Prepared {
  readonly any: boolean;
  readonly origins: ReadonlySet<string>;
  readonly expose: string;
  readonly methods: string;
  readonly headers: string | undefined;
  readonly maxAge: string;
}

// One prepared form per resolved section (a reload resolves a new one), so a request joins no list.
const PREPARED = new WeakMap<CorsConfig, Prepared>();

function prepared(cors: CorsConfig): Prepared {
  let p = PREPARED.get(cors);
  if (p === undefined) {
    p = Object.freeze({
      any: cors.allowedOrigins.includes('*'),
      origins: new Set(cors.allowedOrigins),
      expose: cors.exposedHeaders.join(', '),
      methods: cors.allowedMethods.join(', '),
      headers: cors.allowedHeaders?.join(', '),
      maxAge: String(cors.maxAgeSeconds),
    });
    PREPARED.set(cors, p);
  }
  return p;
}

/**
 * The CORS fields of an answer to `origin`: `Access-Control-Allow-Origin` (the origin, or `*`), `Vary: Origin`
 * when the answer depends on it, credentials when configured, and the exposed fields.
 *
 * @returns the fields, or `undefined` when the section is off, the request has no `Origin` or the origin is not
 *   allowed (the browser then keeps the answer from the page, as it should).
 */
export function corsHeaders(
  cors: CorsConfig | undefined,
  origin: string | undefined,
): OutgoingHttpHeaders | undefined {
  if (cors === undefined || origin === undefined) return undefined;
  const p = prepared(cors);
  if (!p.any && !p.origins.has(origin)) return undefined;
  const out: OutgoingHttpHeaders = {
    'access-control-allow-origin': p.any ? '*' : origin,
    'access-control-expose-headers': p.expose,
  };
  if (!p.any) out.vary = 'Origin';
  if (cors.credentials) out['access-control-allow-credentials'] = 'true';
  return out;
}

/** Whether a request is a CORS preflight: `OPTIONS` with `Origin` and `Access-Control-Request-Method`. */
export function isPreflight(req: IncomingMessage): boolean {
  return (
    req.method === 'OPTIONS' &&
    req.headers.origin !== undefined &&
    req.headers['access-control-request-method'] !== undefined
  );
}

/**
 * Answers a preflight with `204` and, for an allowed origin, the methods, request fields and lifetime the
 * section allows. The preflight is neither admitted nor forwarded: it carries no credentials to key it by, and
 * counting it would charge a browser twice for one call.
 */
export function answerPreflight(
  cors: CorsConfig,
  req: IncomingMessage,
  res: ServerResponse,
  id: [string, string],
): void {
  const p = prepared(cors);
  const head: OutgoingHttpHeaders = { [id[0]]: id[1], 'content-length': '0' };
  const allowed = corsHeaders(cors, req.headers.origin);
  if (allowed !== undefined) {
    Object.assign(head, allowed);
    head.vary = 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers';
    head['access-control-allow-methods'] = p.methods;
    const asked = req.headers['access-control-request-headers'];
    const fields = p.headers ?? asked;
    if (fields !== undefined && fields !== '') head['access-control-allow-headers'] = fields;
    head['access-control-max-age'] = p.maxAge;
    delete head['access-control-expose-headers'];
  }
  res.writeHead(204, head);
  res.end();
}
