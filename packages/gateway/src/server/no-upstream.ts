import type { ServerResponse } from 'node:http';
import { Problems, sendProblem } from '../admission/problem-response.js';
import type { Runtime } from '../admission/runtime.js';

/**
 * Answers a request of the proxy listener when the configuration has no upstream (decision mode: a `decision:`
 * or `envoy:` section serves the limits): the `502` problem `no_upstream`, before admission. Admitting it first
 * would spend tokens of the buckets the decision API and the Envoy service share, for a request that can never
 * be served, and answer a 502 with rate limit headers as if it had been. The health endpoints (`/health`,
 * `/ready`, `/metrics`) and preflights are answered before this, so the listener still serves them.
 *
 * @param rt - the runtime in force (a reload may add or remove the upstream).
 * @param res - the response.
 * @param instance - the request target, for the problem's `instance`.
 * @param id - the request id.
 * @param requestIdHeader - the field that carries it (`server.requestIdHeader`).
 * @returns whether the request was answered (no upstream); `false` leaves it to admission.
 */
export function answerWithoutUpstream(
  rt: Pick<Runtime, 'proxy'>,
  res: ServerResponse,
  instance: string,
  id: string,
  requestIdHeader: string,
): boolean {
  if (rt.proxy !== undefined) return false;
  sendProblem(res, Problems.noUpstream(), instance, id, { [requestIdHeader]: id });
  return true;
}
