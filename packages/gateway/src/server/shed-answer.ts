import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OverloadStage } from '../admission/overload-stage.js';
import type { Runtime } from '../admission/runtime.js';
import type { Logger } from '../log/create-logger.js';
import type { ExtraFields } from '../proxy/extra-fields.js';
import { hasRequestBody } from '../proxy/request-body.js';

/** The problem type of the RateLimit header draft for a refusal under overload, when `problems.typeBase` is unset. */
export const REDUCED_CAPACITY_TYPE =
  'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity';

/**
 * Answers a request the load shedder refused: 503 `application/problem+json` of type `temporary-reduced-capacity`
 * (under `problems.typeBase` when set), with a short `Retry-After` of `overload.retryAfter` plus up to as much
 * again of jitter, so the clients refused together do not come back together. While requests are shed, one warning
 * a second at most says how many and at what limit.
 *
 * @param stage - the runtime's overload stage.
 * @param instance - the request's path and query (the query is left out of the body).
 * @param id - the request id.
 * @param extra - the headers of the admitted request (request id, rate-limit headers, CORS fields).
 */
export function answerShed(
  rt: Runtime,
  stage: OverloadStage,
  logger: Logger,
  req: IncomingMessage,
  res: ServerResponse,
  instance: string,
  id: string,
  extra: Readonly<ExtraFields>,
): void {
  const { body, retryAfter } = shedProblem(rt, stage, logger, instance, id);
  if (res.headersSent) return;
  for (let i = 0; i < extra.length; i += 2) res.setHeader(extra[i] as string, extra[i + 1] as string);
  // An unread request body is the client's to drop: close rather than read it under overload.
  if (hasRequestBody(req.headers) && !req.complete) res.setHeader('connection', 'close');
  res.writeHead(503, {
    'content-type': 'application/problem+json',
    'cache-control': 'no-store',
    'retry-after': retryAfter,
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/**
 * The problem of a refusal under overload, for a plain request ({@link answerShed}) and a protocol upgrade alike:
 * its body and a `Retry-After` with jitter. Logs the warning due (one a second at most) while requests are shed.
 *
 * @param instance - the request's path and query (the query is left out of the body).
 * @param id - the request id.
 */
export function shedProblem(
  rt: Runtime,
  stage: OverloadStage,
  logger: Logger,
  instance: string,
  id: string,
): { readonly body: string; readonly retryAfter: string } {
  const shedder = stage.shedder;
  const due = shedder.warnDue(performance.now());
  if (due > 0) {
    logger.warn(
      { shed: due, limit: shedder.limit, inFlight: shedder.inFlight },
      'requests shed: the upstream is at its overload limit',
    );
  }
  const base = stage.config.retryAfterSeconds;
  const q = instance.indexOf('?');
  const body = JSON.stringify({
    type: rt.problemType?.('temporary-reduced-capacity') ?? REDUCED_CAPACITY_TYPE,
    title: 'Service Unavailable',
    status: 503,
    detail:
      'The upstream is over capacity; requests of this priority are refused for now. Retry after a moment.',
    instance: q < 0 ? instance : instance.slice(0, q),
    code: 'temporary_reduced_capacity',
    correlation_id: id,
  });
  return { body, retryAfter: String(base + Math.floor(Math.random() * (base + 1))) };
}
