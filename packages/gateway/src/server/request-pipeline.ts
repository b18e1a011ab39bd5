import type { IncomingMessage, ServerResponse } from 'node:http';
import { composeObservers, isPromiseLike } from 'sluice/http';
import type { Admission } from '../admission/admit-request.js';
import { type OverloadStage, SHED } from '../admission/overload-stage.js';
import { Problems, sendProblem } from '../admission/problem-response.js';
import { requestIdOf } from '../admission/request-id.js';
import type { Runtime } from '../admission/runtime.js';
import { setField } from '../proxy/extra-fields.js';
import { hasRequestBody } from '../proxy/request-body.js';
import { ResponseFeed } from '../proxy/response-feed.js';
import { admittedHeaders } from './answer-headers.js';
import { closesAfterDenialOf } from './closes-after-denial.js';
import { answerPreflight, corsHeaders, isPreflight } from './cors-headers.js';
import { forwardAdmitted } from './forward-admitted.js';
import { answerHealth, isHealthRequest } from './health-endpoints.js';
import { hasBadHost } from './host-header.js';
import { answerWithoutUpstream } from './no-upstream.js';
import { admitOwnRequest, type ProxyContext } from './proxy-context.js';
import { releasedHeaders } from './released-headers.js';
import { RequestRun } from './request-run.js';
import { readReserveBody } from './reserve-body.js';
import { answerShed } from './shed-answer.js';

/**
 * Serves one request of the proxy listener: the request target, the health endpoints, admission (exemptions,
 * identity, policies), then the upstream, with one log line per request once its response is closed. Answers
 * with a problem body whatever fails; never throws. Synchronous as far as it can go: a promise only when a step
 * waits (a health answer, a body read for a reservation, a store or token that answers later, a denied body).
 */
export function handleRequest(
  ctx: ProxyContext,
  req: IncomingMessage,
  res: ServerResponse,
): void | Promise<void> {
  const started = performance.now();
  const host = ctx.host;
  const rt = host.runtime;
  const c = rt.config;
  const id = requestIdOf(req.headers[c.server.requestIdHeader]);
  ctx.begin();
  // What the response's close reads (outcome, key, tier, whether the body went upstream): one object per request.
  const run = new RequestRun(ctx, req, res, c, id, started);
  // Before anything reads the request, the health endpoints and preflights included: RFC 9112 3.2 makes a request
  // with two Host fields or an invalid one a 400, whatever it asks for.
  if (hasBadHost(req.rawHeaders)) {
    run.outcome = 'bad_host';
    refuseBadHost(res, req.url ?? '/', c.server.requestIdHeader, id);
    return;
  }
  // The request id header is set here only on the gateway's own answers: a proxied response carries it in
  // `extra`, and a response with nothing set before `writeHead` lets Node serialize the flat header list as is.
  if (ctx.draining) res.setHeader('connection', 'close');
  // The `cors:` section's fields go on every answer to an allowed origin, the gateway's own (429s) included;
  // preflights are answered here, before admission, and never reach the upstream.
  const cors = corsHeaders(c.cors, req.headers.origin);
  if (c.cors !== undefined && isPreflight(req)) {
    run.outcome = 'preflight';
    answerPreflight(c.cors, req, res, [c.server.requestIdHeader, id]);
    return;
  }
  if (cors !== undefined) for (const k in cors) res.setHeader(k, cors[k] as string);
  const raw = req.url ?? '/';
  const method = req.method ?? 'GET';
  // The one target parser, shared with the upgrade path and admission: the health endpoints, the rules and the
  // upstream all see this canonical form. A target without one is admission's to refuse (400).
  const target = rt.http.canonicalTarget(raw);
  if (target.ok && isHealthRequest(method, target.path)) {
    run.outcome = 'own';
    res.setHeader(c.server.requestIdHeader, id);
    host.metrics.recordExempt({ reason: 'endpoint' });
    return answerHealth(host, ctx.draining, target.path, req, res);
  }
  // A connection opened during the drain is for the probes: the listener stays open for them only.
  if (ctx.draining && ctx.acceptedWhileDraining(req.socket)) {
    run.outcome = 'shutting_down';
    sendProblem(res, Problems.shuttingDown(), raw, id, {
      [c.server.requestIdHeader]: id,
      'retry-after': '1',
    });
    return;
  }
  // Decision mode: nothing to forward to, so nothing is admitted (no tokens of the shared buckets spent).
  if (answerWithoutUpstream(rt, res, raw, id, c.server.requestIdHeader)) {
    run.outcome = 'no_upstream';
    return;
  }
  try {
    // The response's early close (the client went away) aborts a wait in a queue and returns its tokens.
    // Resolved once: admission keys by it, and the upstream request and the count of bodies use it again.
    const clientIp = rt.clientIp(req.socket.remoteAddress, req.headers);
    // A reservation that names a field of the JSON body (`cost.reserve.field`) reads a small body first, on the
    // routes whose rules take one only (any route when a tier does).
    const scope = rt.reserveBody;
    if (scope !== undefined && target.ok && hasRequestBody(req.headers) && scope.wants(method, target.path))
      return admitWithBody(ctx, rt, req, res, run, id, raw, method, target, cors, clientIp, scope);
    const admitting = admitOwnRequest(ctx, rt, req, method, raw, id, clientIp, res, undefined);
    // The memory store answers in the same tick: no promise, no microtask hop for most requests.
    if (isPromiseLike(admitting))
      return admitLater(ctx, rt, req, res, run, id, raw, target, cors, clientIp, admitting);
    const served = serveAdmitted(ctx, rt, req, res, run, id, raw, target, cors, clientIp, admitting);
    if (served !== undefined) return caught(served, ctx, rt, res, run, id, raw, target);
  } catch (e) {
    failed(ctx, rt, res, run, id, raw, target, e);
  }
}

type Target = ReturnType<Runtime['http']['canonicalTarget']>;
type Cors = ReturnType<typeof corsHeaders>;

/** Admission after the body a reservation reads: the async path of {@link handleRequest}, with its error answer. */
async function admitWithBody(
  ctx: ProxyContext,
  rt: Runtime,
  req: IncomingMessage,
  res: ServerResponse,
  run: RequestRun,
  id: string,
  raw: string,
  method: string,
  target: Target,
  cors: Cors,
  clientIp: string | undefined,
  scope: NonNullable<Runtime['reserveBody']>,
): Promise<void> {
  try {
    const body = await readReserveBody(req, scope.maxBytes, rt.config.server.bodyTimeoutMs || 10_000);
    const admitting = admitOwnRequest(ctx, rt, req, method, raw, id, clientIp, res, body);
    const admission = isPromiseLike(admitting) ? await admitting : admitting;
    await serveAdmitted(ctx, rt, req, res, run, id, raw, target, cors, clientIp, admission);
  } catch (e) {
    failed(ctx, rt, res, run, id, raw, target, e);
  }
}

/** Admission a store or a token answers later: the async path of {@link handleRequest}, with its error answer. */
async function admitLater(
  ctx: ProxyContext,
  rt: Runtime,
  req: IncomingMessage,
  res: ServerResponse,
  run: RequestRun,
  id: string,
  raw: string,
  target: Target,
  cors: Cors,
  clientIp: string | undefined,
  admitting: Promise<Admission>,
): Promise<void> {
  try {
    await serveAdmitted(ctx, rt, req, res, run, id, raw, target, cors, clientIp, await admitting);
  } catch (e) {
    failed(ctx, rt, res, run, id, raw, target, e);
  }
}

/** A denial's wait for its body, with the error answer of {@link handleRequest}. */
async function caught(
  served: Promise<void>,
  ctx: ProxyContext,
  rt: Runtime,
  res: ServerResponse,
  run: RequestRun,
  id: string,
  raw: string,
  target: Target,
): Promise<void> {
  try {
    await served;
  } catch (e) {
    failed(ctx, rt, res, run, id, raw, target, e);
  }
}

/** A request that failed in the gateway: logged, answered 500 if nothing went out yet. */
function failed(
  ctx: ProxyContext,
  rt: Runtime,
  res: ServerResponse,
  run: RequestRun,
  id: string,
  raw: string,
  target: Target,
  e: unknown,
): void {
  run.outcome = 'error';
  ctx.host.logger.error({ reqId: id, err: e }, 'request failed');
  if (!res.headersSent) res.setHeader(rt.config.server.requestIdHeader, id);
  sendProblem(
    res,
    {
      status: 500,
      title: 'Internal Server Error',
      detail: 'The gateway failed to handle the request.',
      code: 'internal_error',
    },
    target.ok ? target.path : raw,
    id,
  );
}

/**
 * Answers an admission: a denial with its problem, a shed request with its 503, an admitted one upstream. A
 * promise only for a denial whose body must be read first; throws for {@link failed}.
 */
function serveAdmitted(
  ctx: ProxyContext,
  rt: Runtime,
  req: IncomingMessage,
  res: ServerResponse,
  run: RequestRun,
  id: string,
  raw: string,
  target: Target,
  cors: Cors,
  clientIp: string | undefined,
  admission: Admission,
): void | Promise<void> {
  const host = ctx.host;
  if (admission.kind === 'deny') {
    run.outcome = admission.outcome;
    run.key = admission.key;
    run.tier = admission.tier;
    if (res.headersSent) return;
    // Admission's headers are complete: rate-limit headers, the problem's content type, no caching, request id.
    const pairs = admission.headers;
    for (let i = 0; i < pairs.length; i++) res.setHeader(pairs[i]?.[0] as string, pairs[i]?.[1] as string);
    // A denial keeps the connection (Node reads the rest of a small declared body after the answer; a chunked
    // one is read and dropped here first, up to the same bound). A larger upload still unread closes it, and
    // so does one the client holds back for a `100 Continue` it never gets (the 429 goes out without one):
    // announced first, since a silent close fails the next request.
    if (!req.complete) {
      const closes = closesAfterDenialOf(req, rt.config.server.maxBodyBytes);
      if (typeof closes !== 'boolean') return denyAfterBody(res, admission, closes);
      if (closes) res.setHeader('connection', 'close');
    }
    sendDenial(res, admission);
    return;
  }
  run.key = admission.key;
  run.tier = admission.tier;
  if (admission.kind === 'exempt') run.outcome = admission.outcome;
  // In the extra fields too, so an upstream's own CORS fields give way to the section's.
  const extra = admittedHeaders(rt, id, admission);
  if (cors !== undefined) for (const k in cors) setField(extra, k, cors[k] as string);
  // An exempt request's observer only removes upstream cost headers on a route whose rule names one.
  const owned = admission.observer;
  // Load shedding, the admission stage after the limits: a request beyond its priority's share of the upstream's
  // limit is refused and gives back what its limits hold; an admitted one is counted until its response ends.
  const overload = rt.overload;
  const held = overload?.enter(
    admission,
    admission.kind === 'allow' ? admission.rules : undefined,
    performance.now(),
  );
  if (held === SHED) {
    run.outcome = 'shed';
    owned?.end(NOT_SENT);
    // Its slots are back: the answer counts them free (D-G185).
    if (admission.kind === 'allow') {
      const pairs = releasedHeaders(admission.headers, admission.decision, Date.now());
      for (let i = 0; i < pairs.length; i++) setField(extra, pairs[i][0], pairs[i][1]);
    }
    answerShed(rt, overload as OverloadStage, host.logger, req, res, raw, id, extra);
    return;
  }
  // Only a request that holds something (a concurrency slot, a cost, a place under the overload limit) is fed:
  // from here on, whatever answers it, the response's close ends its observer exactly once.
  const observer = composeObservers(owned, held);
  const feed = observer === undefined ? undefined : new ResponseFeed(observer, req, res);
  // Admission admits canonical targets only; forwarding anything else would let the upstream see a path the
  // rules did not.
  if (!target.ok) throw new Error('admission admitted a request target it refuses');
  run.forwarded = true;
  forwardAdmitted(ctx, rt, req, res, target.path + target.query, id, clientIp, extra, run, feed);
}

/** A denial after its chunked body was read: closes the connection after it when the body ran past the bound. */
async function denyAfterBody(
  res: ServerResponse,
  admission: Extract<Admission, { kind: 'deny' }>,
  closes: Promise<boolean>,
): Promise<void> {
  if (await closes) res.setHeader('connection', 'close');
  if (res.headersSent) return;
  sendDenial(res, admission);
}

/** Writes a denial's status and problem body (its fields are set already). */
function sendDenial(res: ServerResponse, admission: Extract<Admission, { kind: 'deny' }>): void {
  res.writeHead(admission.status, { 'content-length': Buffer.byteLength(admission.body) });
  res.end(admission.body);
}

/** The end of a response never sent upstream (a request shed after its limits admitted it). */
const NOT_SENT = Object.freeze({ completed: false, status: 0, bytesSent: 0, bytesReceived: 0 });

/**
 * Answers a request whose Host fields are malformed with the `bad_host` problem and closes the connection, as
 * Node.js closes it after the malformed requests it refuses itself: such a request comes from a broken client or
 * from one probing how hops disagree about the host, and nothing more on its connection is worth serving.
 */
function refuseBadHost(res: ServerResponse, raw: string, idHeader: string, id: string): void {
  res.setHeader('connection', 'close');
  sendProblem(res, Problems.badHost(), raw, id, { [idHeader]: id });
}
