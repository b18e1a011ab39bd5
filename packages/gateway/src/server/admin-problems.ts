import type { GatewayProblem } from '../admission/problem-response.js';

/**
 * The problems only the admin listener answers, by code: one shape for every error of the listener
 * (`application/problem+json` with `code`, as `bad_request` and the override problems), documented in
 * docs/errors.md. Answered with `sendProblem` and no request id.
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
