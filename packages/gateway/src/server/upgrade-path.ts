import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Admission } from '../admission/admit-request.js';
import { type OverloadStage, SHED } from '../admission/overload-stage.js';
import {
  type GatewayProblem,
  Problems,
  problemBody,
  writeRawResponse,
} from '../admission/problem-response.js';
import { requestIdOf } from '../admission/request-id.js';
import type { Runtime } from '../admission/runtime.js';
import { UpgradeFeed } from '../proxy/upgrade-feed.js';
import { admittedHeaders, problemHeaders, upstreamHeaders } from './answer-headers.js';
import { busyRetryAfter } from './busy-retry-after.js';
import { hasBadHost } from './host-header.js';
import { admitOwnRequest, type ProxyContext } from './proxy-context.js';
import { releasedHeaders } from './released-headers.js';
import { shedProblem } from './shed-answer.js';

/** What ends a slot of an upgrade shed before it was sent. */
const NOT_SENT = Object.freeze({ completed: false, status: 0, bytesSent: 0, bytesReceived: 0 });

/**
 * Serves a protocol upgrade (WebSocket) of the proxy listener: the same target parser, admission and headers as a
 * plain request, limited once at connect; then the upstream's `101` and both sockets joined, or the upstream's
 * other answer passed on. A refusal is written on the raw socket, which is then closed. Never throws.
 */
export async function handleUpgrade(
  ctx: ProxyContext,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  const host = ctx.host;
  const rt = host.runtime;
  const id = requestIdOf(req.headers[rt.config.server.requestIdHeader]);
  socket.on('error', () => socket.destroy());
  const raw = req.url ?? '/';
  const method = req.method ?? 'GET';
  // The same check as a plain request's, first: RFC 9112 3.2 makes two Host fields or an invalid one a 400.
  if (hasBadHost(req.rawHeaders)) {
    if (ctx.requestLog.wants(rt.config.logging.requests, 'bad_host')) {
      ctx.requestLog.write({ reqId: id, method, url: raw, status: 400, outcome: 'bad_host', upgrade: true });
    }
    refuse(rt, socket, Problems.badHost(), raw, id);
    return;
  }
  if (ctx.draining) {
    writeRawResponse(socket, 503, [], '');
    return;
  }
  // Decision mode: nothing to switch to, refused before admission as a plain request is (no tokens spent).
  const upstream = rt.proxy;
  if (upstream === undefined) {
    if (ctx.requestLog.wants(rt.config.logging.requests, 'no_upstream')) {
      ctx.requestLog.write({
        reqId: id,
        method,
        url: raw,
        status: 502,
        outcome: 'no_upstream',
        upgrade: true,
      });
    }
    refuse(rt, socket, Problems.noUpstream(), raw, id);
    return;
  }
  // The same parser as a plain request's and admission's: a target without a canonical form is refused below.
  const target = rt.http.canonicalTarget(raw);
  const clientIp = rt.clientIp(req.socket.remoteAddress, req.headers);
  let admission: Admission;
  try {
    admission = await admitOwnRequest(ctx, rt, req, method, raw, id, clientIp);
  } catch (e) {
    host.logger.error({ reqId: id, err: e }, 'upgrade failed');
    writeRawResponse(socket, 500, [], '');
    return;
  }
  const log = (status: number, outcome: string, key?: string) => {
    if (!ctx.requestLog.wants(rt.config.logging.requests, outcome)) return;
    ctx.requestLog.write({ reqId: id, method, url: raw, status, outcome, key, upgrade: true });
  };
  if (admission.kind === 'deny') {
    log(admission.status, admission.outcome, admission.key);
    // Admission's headers are complete: rate-limit headers, the problem's content type, no caching, request id.
    writeRawResponse(socket, admission.status, admission.headers, admission.body);
    return;
  }
  const owned = admission.observer;
  // Load shedding, as for a plain request: an upgrade takes a place by its priority, or is refused with 503 and
  // gives back what its limits hold.
  const overload = rt.overload;
  const place = overload?.enter(
    admission,
    admission.kind === 'allow' ? admission.rules : undefined,
    performance.now(),
  );
  if (place === SHED) {
    log(503, 'shed', admission.key);
    owned?.end(NOT_SENT);
    const shed = shedProblem(rt, overload as OverloadStage, host.logger, raw, id);
    // With the rate-limit headers of its admission, as a plain request's refusal (shed-answer) has them.
    // Its slots are back: the answer counts them free (D-G185).
    const given =
      admission.kind === 'allow' ? releasedHeaders(admission.headers, admission.decision, Date.now()) : [];
    writeRawResponse(
      socket,
      503,
      problemHeaders(rt, id, [...given, ['retry-after', shed.retryAfter]]),
      shed.body,
    );
    return;
  }
  // Only an upgrade that holds something (a concurrency slot, a place under the overload limit) is fed; its
  // socket's close ends it exactly once, however the upgrade goes on: switched (a slot held while the connection
  // lives, a place until the upstream answered), answered, refused or failed.
  const feed = owned !== undefined || place !== undefined ? new UpgradeFeed(owned, socket, place) : undefined;
  // Admission admits canonical targets only; anything else must not reach the upstream.
  if (!target.ok) {
    host.logger.error({ reqId: id }, 'admission admitted a request target it refuses');
    feed?.answered(500);
    writeRawResponse(socket, 500, [], '');
    return;
  }
  const path = target.path;
  const result = await upstream.upgrade(
    req,
    socket,
    head,
    path + target.query,
    upstreamHeaders(rt, req, id, clientIp),
    admittedHeaders(rt, id, admission),
    rt.config.upstream.queueTimeoutMs,
    feed,
  );
  const outcome = admission.kind === 'exempt' ? `exempt_${admission.reason}` : 'proxied';
  if (result.kind === 'switched') {
    ctx.keepUpgraded(socket);
    log(101, outcome);
    return;
  }
  if (result.kind === 'answered') {
    // The upstream refused to switch (credentials, another protocol): the client has its answer.
    log(result.status, outcome);
    return;
  }
  if (result.kind === 'queue_timeout') {
    // As a plain request's (request-pipeline): 503 with one queue wait as Retry-After, counted.
    host.metrics.recordUpstreamRefusal?.('queue_timeout');
    const p = Problems.upstreamQueueTimeout(result.error.queueTimeoutMs);
    feed?.answered(p.status);
    writeRawResponse(
      socket,
      p.status,
      problemHeaders(rt, id, [['retry-after', busyRetryAfter(result.error.queueTimeoutMs)]]),
      problemBody(p, path, id),
    );
  } else if (result.kind !== 'aborted') {
    refuse(
      rt,
      socket,
      result.kind === 'timeout' ? Problems.gatewayTimeout() : Problems.badGateway(),
      path,
      id,
      feed,
    );
  }
  host.logger.warn({ reqId: id, kind: result.kind, err: result.error.message }, 'upgrade not passed through');
}

function refuse(
  rt: Runtime,
  socket: Duplex,
  p: GatewayProblem,
  instance: string,
  id: string,
  feed?: UpgradeFeed,
): void {
  feed?.answered(p.status);
  writeRawResponse(socket, p.status, problemHeaders(rt, id), problemBody(p, instance, id));
}
