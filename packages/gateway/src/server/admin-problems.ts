import type { ServerResponse } from 'node:http';
import { type GatewayProblem, problemBody } from '../admission/problem-response.js';

/**
 * The problems only the admin listener answers, by code: one shape for every error of the listener
 * (`application/problem+json` with `code`, as `bad_request` and the override problems), documented in
 * docs/errors.md.
 */
export const AdminProblems = Object.freeze({
  unauthorized: (): GatewayProblem => ({
    status: 401,
    title: 'Unauthorized',
    detail: 'Send Authorization: Bearer <admin.token>.',
    code: 'unauthorized',
  }),
  notFound: (detail: string): GatewayProblem => ({
    status: 404,
    title: 'Not Found',
    detail,
    code: 'not_found',
  }),
  methodNotAllowed: (allow: string): GatewayProblem => ({
    status: 405,
    title: 'Method Not Allowed',
    detail: `This route answers ${allow}.`,
    code: 'method_not_allowed',
  }),
  quotaNotConfigured: (): GatewayProblem => ({
    status: 404,
    title: 'Not Found',
    detail: 'Add a quota: section to the configuration to track tenant usage.',
    code: 'quota_not_configured',
  }),
  metricsDisabled: (): GatewayProblem => ({
    status: 404,
    title: 'Not Found',
    detail: 'metrics.enabled is false in the configuration.',
    code: 'metrics_disabled',
  }),
  internalError: (detail: string): GatewayProblem => ({
    status: 500,
    title: 'Internal Server Error',
    detail,
    code: 'internal_error',
  }),
});

/**
 * Answers an admin request with a problem, `Cache-Control: no-store`, and any members beside the standard ones
 * (the route list of a `not_found`).
 *
 * @param instance - the request's path.
 * @param headers - more header fields (`WWW-Authenticate` of a 401, `Allow` of a 405).
 * @param members - more members of the body; they never replace a standard one.
 */
export function sendAdminProblem(
  res: ServerResponse,
  p: GatewayProblem,
  instance: string,
  headers: Record<string, string> = {},
  members: Record<string, unknown> = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ ...members, ...JSON.parse(problemBody(p, instance)) });
  res.writeHead(p.status, {
    ...headers,
    'content-type': 'application/problem+json',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}
