/**
 * One RFC 9457 problem that is not a rate-limit denial: a refused request target (400), refused credentials
 * (401), a store that cannot decide (503), and the gateway's own answers (413, 502, 504). Every entry of Sluice
 * writes these with the same members as the 429 body, so a client reads one shape everywhere.
 */
export interface HttpProblem {
  readonly status: number;
  /** The short summary; used as the title when a problem type base is configured. */
  readonly title: string;
  /** A sentence for people: what happened and what to do. */
  readonly detail: string;
  /** A stable code for programs and logs, for example `invalid_credentials`. */
  readonly code: string;
  /** The slug of the problem type URI under the configured base, for example `invalid-credentials`. */
  readonly slug?: string;
}

/** Status phrases for the `about:blank` type, whose title must be the phrase of the status (RFC 9457, 4.2.1). */
const PHRASES: Readonly<Record<number, string>> = Object.freeze({
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  413: 'Content Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
});

/**
 * Serializes a problem as an `application/problem+json` body.
 *
 * @param problem - status, title, detail, code and optional type slug.
 * @param instance - the request path (a query string is cut off, so no secret in it is echoed).
 * @param correlationId - the request's correlation id, in the member `correlation_id` like the 429 body.
 * @param typeOf - the problem type resolver of `problemTypeBase`; `undefined` for `about:blank`.
 * @returns the JSON text.
 *
 * @example
 * ```ts
 * httpProblemBody({ status: 400, title: 'Bad Request', detail: 'No fragments.', code: 'bad_target' }, '/a', 'id-1');
 * ```
 */
export function httpProblemBody(
  problem: HttpProblem,
  instance: string,
  correlationId: string,
  typeOf?: (slug: string) => string,
): string {
  const q = instance.indexOf('?');
  const slug = problem.slug ?? problem.code.replaceAll('_', '-');
  return JSON.stringify({
    type: typeOf ? typeOf(slug) : 'about:blank',
    title: typeOf ? problem.title : (PHRASES[problem.status] ?? problem.title),
    status: problem.status,
    detail: problem.detail,
    instance: q < 0 ? instance : instance.slice(0, q),
    code: problem.code,
    correlation_id: correlationId,
  });
}
