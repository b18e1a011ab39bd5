/**
 * A real HTTP server on 127.0.0.1 for the client SDK's tests: the engine's Limiter over a MemoryStore on a
 * ManualClock, with the HTTP layer's header formatting and problem bodies (`sluice/http`). The test scripts only what a real server would vary
 * (header form, Retry-After form, a load-shedding 503 phase); every 200 and 429 is the limiter's own decision.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Decision, Limiter, type ManualClock, type PolicyOptions } from '../../src/core/index.js';
import {
  formatDecisionHeaders,
  PROBLEM_CONTENT_TYPE,
  problemTypeResolver,
  rateLimitProblemBody,
} from '../../src/http/index.js';
import { MemoryStore } from '../../src/memory/index.js';

/** How the server writes its rate-limit fields. */
export type ServerHeaderForm = 'draft-11' | 'x-ratelimit' | 'ratelimit-legacy' | 'none';

/** What a test may change while the server runs. */
export interface ServerConfig {
  form: ServerHeaderForm;
  /** `seconds` (delay-seconds) or `date` (an IMF-fixdate computed from the server's Date). */
  retryAfter: 'seconds' | 'date';
  /** Send a `Date` field (false also stops Node adding its own). */
  sendDate: boolean;
  /** Answer this many next API requests with 503 before the limiter sees them (load shedding). */
  busy: number;
  /** The Retry-After of those 503s, none when undefined. */
  busyRetryAfter: number | undefined;
}

/** One request as the server saw it. */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly body: string;
  readonly idempotencyKey: string | undefined;
}

/** A running server; `close()` it after the test. */
export interface RateLimitServer {
  readonly url: string;
  readonly limiter: Limiter;
  readonly config: ServerConfig;
  readonly requests: SeenRequest[];
  /** Static files served without limiting (the browser test's page and bundle). */
  readonly files: Map<string, { type: string; body: string }>;
  /** The wall-clock time the server speaks of: `epochMs` plus the ManualClock. */
  wallNow(): number;
  close(): Promise<void>;
}

/** 2026-01-01T00:00:00Z: whole seconds, so HTTP-dates are exact. */
export const EPOCH_MS = Date.UTC(2026, 0, 1);

/**
 * Starts the server on 127.0.0.1 and a free port. Every API request is decided for one key over all `policies`.
 *
 * @param clock - the engine's clock; tests usually share it with the client so waits refill the buckets.
 */
export async function startRateLimitServer(
  clock: ManualClock,
  policies: PolicyOptions[],
  config: Partial<ServerConfig> = {},
): Promise<RateLimitServer> {
  const limiter = new Limiter({ policies, store: new MemoryStore({ clock, sweepIntervalMs: 0 }), clock });
  const checks = limiter.resolve(policies.map((p) => ({ policy: p.name, key: 'client:1' })));
  const cfg: ServerConfig = {
    form: 'draft-11',
    retryAfter: 'seconds',
    sendDate: true,
    busy: 0,
    busyRetryAfter: undefined,
    ...config,
  };
  const requests: SeenRequest[] = [];
  const files = new Map<string, { type: string; body: string }>();
  const wallNow = () => EPOCH_MS + clock.now();
  const typeOf = problemTypeResolver('https://errors.example.test/problems/');

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const file = files.get(path);
      if (file !== undefined) {
        res.writeHead(200, { 'Content-Type': file.type, 'Cache-Control': 'no-store' });
        res.end(file.body);
        return;
      }
      const now = wallNow();
      res.sendDate = false;
      if (cfg.sendDate) res.setHeader('Date', new Date(now).toUTCString());
      const retryAfterValue = (seconds: number) =>
        cfg.retryAfter === 'date' ? new Date(now + seconds * 1000).toUTCString() : String(seconds);
      let status: number;
      if (cfg.busy > 0) {
        cfg.busy--;
        status = 503;
        if (cfg.busyRetryAfter !== undefined)
          res.setHeader('Retry-After', retryAfterValue(cfg.busyRetryAfter));
        problem(res, status, { title: 'Service Unavailable', detail: 'shedding load', instance: path });
      } else {
        const d = limiter.decide(checks) as Decision;
        status = d.allowed ? 200 : 429;
        writeRateLimitFields(res, d, cfg.form, now);
        if (!d.allowed) res.setHeader('Retry-After', retryAfterValue(d.retryAfterSeconds));
        if (d.allowed) {
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify({ ok: true, path }));
        } else {
          res.writeHead(429, { 'Content-Type': PROBLEM_CONTENT_TYPE });
          res.end(rateLimitProblemBody({ decision: d, path, correlationId: 'test', nowMs: now, typeOf }));
        }
      }
      const key = req.headers['idempotency-key'];
      requests.push({
        method: req.method ?? 'GET',
        path,
        status,
        body: Buffer.concat(chunks).toString('utf8'),
        idempotencyKey: typeof key === 'string' ? key : undefined,
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    limiter,
    config: cfg,
    requests,
    files,
    wallNow,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}

function writeRateLimitFields(res: ServerResponse, d: Decision, form: ServerHeaderForm, nowMs: number): void {
  if (form === 'draft-11' || form === 'x-ratelimit') {
    const mode = form === 'draft-11' ? 'draft-11' : 'legacy';
    for (const [name, value] of formatDecisionHeaders(d, { mode, nowMs })) {
      if (name !== 'Retry-After') res.setHeader(name, value);
    }
  } else if (form === 'ratelimit-legacy') {
    // Drafts 00 to 06: one policy, reset as delta seconds, the window as a parameter of the limit.
    const o = d.outcomes[0];
    res.setHeader('RateLimit-Limit', `${o.policy.quota}, ${o.policy.quota};w=${o.policy.window}`);
    res.setHeader('RateLimit-Remaining', String(o.remaining));
    res.setHeader('RateLimit-Reset', String(o.resetSeconds));
  }
}

function problem(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  res.writeHead(status, { 'Content-Type': PROBLEM_CONTENT_TYPE });
  res.end(JSON.stringify({ status, ...body }));
}
