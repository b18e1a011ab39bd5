import type { IncomingMessage, ServerResponse } from 'node:http';
import { ipKey } from 'sluice/http';
import { type GatewayProblem, Problems, sendProblem } from '../admission/problem-response.js';
import type { Runtime } from '../admission/runtime.js';
import { type ExtraFields, fieldRecord } from '../proxy/extra-fields.js';
import { hasRequestBody } from '../proxy/request-body.js';
import type { ResponseFeed } from '../proxy/response-feed.js';
import { upstreamHeaders } from './answer-headers.js';
import { busyRetryAfter } from './busy-retry-after.js';
import { closesAfterDenialOf } from './closes-after-denial.js';
import type { ProxyContext } from './proxy-context.js';
import type { RequestRun } from './request-run.js';

/** Forwards an admitted request to the upstream, streaming the body both ways, and answers its failures. */
export function forwardAdmitted(
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
