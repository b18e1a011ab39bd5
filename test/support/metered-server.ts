/**
 * A small node:http server that runs every request through a limiter and exposes a metrics registry on
 * `/metrics`: the server half of the Prometheus end-to-end test, kept separate so the gateway's tests can run the
 * same scrape checks against the gateway instead.
 *
 * @example
 * ```ts
 * const app = await startMeteredServer({ limiter, metrics, policy: 'rl.write' });
 * await fetch(`${app.url}/api/x`, { headers: { 'x-client': 'a' } }); // 200, then 429 once the bucket is empty
 * await app.close();
 * ```
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Decision, Limiter } from 'sluice';
import { type DecisionLabels, decideWithMetrics } from 'sluice/metrics';
import { metricsHandler, type PrometheusMetrics } from 'sluice/prometheus';

/** Options of {@link startMeteredServer}. */
export interface MeteredServerOptions {
  readonly limiter: Limiter;
  readonly metrics: PrometheusMetrics;
  /** The policy every request is checked against. */
  readonly policy: string;
  /** Paths exempt from limiting (recorded as exempt); `/metrics` is always served. */
  readonly exempt?: readonly string[];
  /** Labels recorded with each decision. */
  readonly labels?: DecisionLabels;
}

/** A running metered server. */
export interface MeteredServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** `127.0.0.1:<port>`, a scrape target. */
  readonly target: string;
  close(): Promise<void>;
}

/**
 * Starts the server on a free loopback port. The rate limit key is the `x-client` header (tests only; a real
 * server keys by verified identity or client IP).
 */
export async function startMeteredServer(options: MeteredServerOptions): Promise<MeteredServer> {
  const { limiter, metrics } = options;
  const serveMetrics = metricsHandler(metrics.registry);
  const labels = Object.freeze({ store: limiter.store.kind, ...options.labels });
  const exempt = new Set(options.exempt ?? []);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics') {
      serveMetrics(req, res);
      return;
    }
    if (exempt.has(path)) {
      metrics.recordExempt({ reason: 'endpoint', rule: path, tier: labels.tier });
      res.writeHead(200).end('ok\n');
      return;
    }
    const key = `client:${String(req.headers['x-client'] ?? 'anonymous')}`;
    Promise.resolve(decideWithMetrics(limiter, [{ policy: options.policy, key }], 1, metrics, labels)).then(
      (d: Decision) => {
        if (d.allowed) res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
        else res.writeHead(429, { 'retry-after': String(d.retryAfterSeconds) }).end('limited\n');
      },
      () => res.writeHead(503).end(),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    target: `127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
