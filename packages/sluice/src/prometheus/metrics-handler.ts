import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';

/**
 * A node:http request handler that serves a registry in the Prometheus text format: `GET` and `HEAD` answer 200
 * with the registry's content type, other methods 405 with `Allow`, and a collection failure 500 (the error is
 * not echoed, since it may name internals). Mount it on `/metrics` of any server, or pass it to
 * `http.createServer` for a metrics-only port.
 *
 * @param registry - the registry to expose, for example `new PrometheusMetrics().registry`.
 * @returns the handler.
 *
 * @example
 * ```ts
 * const metrics = new PrometheusMetrics();
 * const handle = metricsHandler(metrics.registry);
 * http.createServer((req, res) => (req.url === '/metrics' ? handle(req, res) : app(req, res))).listen(8080);
 * ```
 */
export function metricsHandler(registry: Registry): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, {
          'content-type': registry.contentType,
          'cache-control': 'no-store',
          'content-length': Buffer.byteLength(text),
        });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      () => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('metrics collection failed\n');
      },
    );
  };
}
