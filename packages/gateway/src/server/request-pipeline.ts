import type { IncomingMessage, ServerResponse } from 'node:http';
import { closesAfterDenial, composeObservers, ipKey, isPromiseLike } from 'sluice/http';
import { type OverloadStage, SHED } from '../admission/overload-stage.js';
import { type GatewayProblem, Problems, sendProblem } from '../admission/problem-response.js';
import { requestIdOf } from '../admission/request-id.js';
import type { Runtime } from '../admission/runtime.js';
import { expectsContinue } from '../proxy/expects-continue.js';
import { type ExtraFields, fieldRecord, setField } from '../proxy/extra-fields.js';
import { hasRequestBody } from '../proxy/request-body.js';
import { ResponseFeed } from '../proxy/response-feed.js';
import { admittedHeaders, upstreamHeaders } from './answer-headers.js';
import { busyRetryAfter } from './busy-retry-after.js';
import { answerPreflight, corsHeaders, isPreflight } from './cors-headers.js';
import { DENIED_BODY_DRAIN_BYTES, drainBody } from './drain-body.js';
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
 * with a problem body whatever fails; never throws.
 */
export async function handleRequest(
  ctx: ProxyContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
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
    await answerHealth(host, ctx.draining, target.path, req, res);
    return;
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
    const reserveBody =
      scope !== undefined && target.ok && hasRequestBody(req.headers) && scope.wants(method, target.path)
        ? await readReserveBody(req, scope.maxBytes, c.server.bodyTimeoutMs || 10_000)
        : undefined;
    const admitting = admitOwnRequest(ctx, rt, req, method, raw, id, clientIp, res, reserveBody);
    // The memory store answers in the same tick: no await, so no microtask hop for most requests.
    const admission = isPromiseLike(admitting) ? await admitting : admitting;
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
      if (!req.complete && (await closesAfterDenialOf(req, c.server.maxBodyBytes))) {
        res.setHeader('connection', 'close');
      }
      if (res.headersSent) return;
      res.writeHead(admission.status, { 'content-length': Buffer.byteLength(admission.body) });
      res.end(admission.body);
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
    proxy(ctx, rt, req, res, target.path + target.query, id, clientIp, extra, run, feed);
  } catch (e) {
    run.outcome = 'error';
    host.logger.error({ reqId: id, err: e }, 'request failed');
    if (!res.headersSent) res.setHeader(c.server.requestIdHeader, id);
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

/**
 * Whether the denial of a request whose body is not read yet must close the connection: a body the client holds
 * back for `100 Continue`, a declared one over the drain bound, or a chunked one that runs past it while it is
 * read and dropped here.
 */
async function closesAfterDenialOf(req: IncomingMessage, maxBodyBytes: number): Promise<boolean> {
  const limit = Math.min(maxBodyBytes, DENIED_BODY_DRAIN_BYTES);
  const declared = req.headers['content-length'];
  if (expectsContinue(req)) return declared !== '0';
  if (req.headers['transfer-encoding'] !== undefined) return !(await drainBody(req, limit));
  return closesAfterDenial(req.headers, limit);
}

/** Forwards an admitted request to the upstream, streaming the body both ways, and answers its failures. */
function proxy(
  ctx: ProxyContext,
  rt: Runtime,
  req: IncomingMessage,
  res: ServerResponse,
  pathAndQuery: string,
  id: string,
  clientIp: string | undefined,
  extra: ExtraFields,
  run: RequestRun,
  feed: ResponseFeed | undefined,
): void {
  const c = rt.config;
  const instance = pathAndQuery;
  // Without an upstream the request was answered before admission (answerWithoutUpstream).
  const upstream = rt.proxy;
  if (upstream === undefined) throw new Error('a request reached the proxy without an upstream');
  const length = Number(req.headers['content-length'] ?? 0);
  if (length > c.server.maxBodyBytes) {
    run.forwardingEnded('too_large');
    res.setHeader('connection', 'close');
    sendProblem(res, Problems.tooLarge(c.server.maxBodyBytes), instance, id, fieldRecord(extra));
    res.once('finish', () => req.socket.destroySoon?.());
    return;
  }
  const headers = upstreamHeaders(rt, req, id, clientIp);
  // `100 Continue` is the proxy's to send, once the request holds its upstream connection (UpstreamProxy.forward).
  delete headers.expect;
  // A cost read from the JSON answer (its usage) is read as the upstream writes it: compressed, it could not be
  // found and a client asking for gzip would pay only its reservation. The client gets the answer uncompressed.
  if (feed?.wantsBody === true) headers['accept-encoding'] = 'identity';
  // Bodies are counted per client address, as the `ip:` keys give it: behind `server.trustedProxies` the address
  // they report, so a load balancer's clients are not one client. Not an identity key: a tenant's many users
  // share theirs, and an anonymous client's key is its address anyway.
  const client =
    c.upstream.maxBodiesPerClient > 0 && hasRequestBody(req.headers) ? ipKey(clientIp) : undefined;
  // The `server:` section in effect is the body's rules as it is: its size limit and its pace; the `upstream:`
  // section the wait for a connection and the cap of bodies per client (a reload applies to the next request).
  upstream.forward(
    req,
    res,
    pathAndQuery,
    headers,
    extra,
    c.server,
    c.upstream,
    client,
    (failure) => {
      if (failure === undefined) return;
      if (failure.kind === 'queue_timeout' || failure.kind === 'client_bodies') {
        run.forwardingEnded(
          failure.kind === 'queue_timeout' ? 'upstream_queue_timeout' : 'client_bodies',
          true,
        );
        void refuseBusy(ctx, rt, req, res, instance, id, extra, failure.kind === 'queue_timeout');
        return;
      }
      // A slow body is the client's doing, not the upstream's: logged under its own outcome.
      if (failure.kind === 'aborted') {
        run.forwardingEnded('client_closed');
        return;
      }
      run.forwardingEnded(failure.kind === 'body_timeout' ? 'body_timeout' : `upstream_${failure.kind}`);
      try {
        const problem: GatewayProblem =
          failure.kind === 'timeout'
            ? Problems.gatewayTimeout()
            : failure.kind === 'too_large'
              ? Problems.tooLarge(c.server.maxBodyBytes)
              : failure.kind === 'body_timeout'
                ? Problems.bodyTimeout(failure.error.pace.bodyTimeoutMs, failure.error.pace.bodyMinRate)
                : Problems.badGateway();
        ctx.host.logger.warn(
          { reqId: id, err: failure.error.message, kind: failure.kind },
          failure.kind === 'body_timeout' ? 'request body too slow' : 'upstream request failed',
        );
        // The rest of the body is unread: the connection cannot carry another request.
        if (failure.kind === 'too_large' || failure.kind === 'body_timeout')
          res.setHeader('connection', 'close');
        sendProblem(res, problem, instance, id, fieldRecord(extra));
      } catch (e) {
        // Called from undici's handler: an error here must end this response, never reach the pool.
        ctx.host.logger.error({ reqId: id, err: e }, 'request failed');
        res.destroy();
      }
    },
    feed,
    run,
  );
}

/**
 * Answers an admitted request that was not sent upstream because the pool stayed full for `upstream.queueTimeout`
 * (503 `upstream_queue_timeout`) or because its client already streams `upstream.maxBodiesPerClient` bodies (429
 * `too_many_request_bodies`, the client's own doing: RFC 6585's too many requests, which its retry logic knows, and
 * no 5xx that would page the upstream's operators), with `Retry-After`, and counts it.
 */
async function refuseBusy(
  ctx: ProxyContext,
  rt: Runtime,
  req: IncomingMessage,
  res: ServerResponse,
  instance: string,
  id: string,
  extra: ExtraFields,
  queueTimeout: boolean,
): Promise<void> {
  const c = rt.config;
  const u = c.upstream;
  ctx.host.metrics.recordUpstreamRefusal?.(queueTimeout ? 'queue_timeout' : 'client_bodies');
  try {
    if (queueTimeout)
      ctx.host.logger.warn({ reqId: id, queueTimeoutMs: u.queueTimeoutMs }, 'upstream pool full');
    // The body was never read. As after a rate-limit denial, a small one is dropped and the connection serves the
    // requests pipelined behind it; a larger one, or one held back for a `100 Continue` never sent, closes it.
    if (!req.complete && (await closesAfterDenialOf(req, c.server.maxBodyBytes))) {
      res.setHeader('connection', 'close');
    }
    if (res.headersSent || res.destroyed) return;
    sendProblem(
      res,
      queueTimeout
        ? Problems.upstreamQueueTimeout(u.queueTimeoutMs)
        : Problems.tooManyRequestBodies(u.maxBodiesPerClient),
      instance,
      id,
      { ...fieldRecord(extra), 'retry-after': busyRetryAfter(u.queueTimeoutMs) },
    );
  } catch (e) {
    // Called from the gate's timer: an error here must end this response, never reach the pool.
    ctx.host.logger.error({ reqId: id, err: e }, 'request failed');
    res.destroy();
  }
}
