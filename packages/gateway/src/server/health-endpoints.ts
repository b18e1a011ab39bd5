import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RateLimitStore } from 'sluice';
import type { PrometheusMetrics } from 'sluice/prometheus';
import type { Runtime } from '../admission/runtime.js';
import { withoutTenantSeries } from '../metrics/public-series.js';

const HEALTH_PATHS = new Set(['/health', '/ready', '/metrics']);
/** How long `/ready` waits for the store before calling it unavailable. */
const STORE_PROBE_MS = 1000;

/** What `/metrics` reads of the gateway, on the proxy listener and on the admin listener. */
export interface MetricsSource {
  /** The registry whose content type `/metrics` answers with. */
  readonly metrics: { readonly registry: { readonly contentType: string } };
  /** The Prometheus text `/metrics` serves (with `--threads`, every thread's series aggregated). */
  scrape(): Promise<string>;
}

/** What the health endpoints read of the gateway. */
export interface HealthSource {
  /** The configuration in effect (`metrics.enabled`, the policies to probe the store with). */
  readonly runtime: Runtime;
  readonly store: RateLimitStore;
  /** The registry whose content type `/metrics` answers with. */
  readonly metrics: PrometheusMetrics;
  /** The Prometheus text `/metrics` serves (with `--threads`, every thread's series aggregated). */
  scrape(): Promise<string>;
  /**
   * True while some thread of `sluice serve --threads` does not listen yet: `/ready` answers 503 until the whole
   * process serves, so a load balancer never sends its traffic to a half-started process.
   */
  readonly starting: boolean;
  /**
   * Whether the overrides and blocks in the store are known (false in a gateway that started while Redis was down,
   * until it reads them). A request admitted meanwhile misses every block: with `failureMode: closed` `/ready`
   * answers 503 until they are known; with `open` or `local`, which put the API's availability first, it answers
   * 200 `degraded` with `overrides: "unknown"`, so that an outage of Redis never keeps a new pod out of service.
   */
  readonly overrides: { readonly loaded: boolean };
}

/** True for `GET` or `HEAD` of `/health`, `/ready` or `/metrics`: the gateway answers them itself. */
export function isHealthRequest(method: string, path: string): boolean {
  return (method === 'GET' || method === 'HEAD') && HEALTH_PATHS.has(path);
}

/**
 * Answers the gateway's own endpoints on the proxy listener: `/health` (the process runs), `/ready` (every
 * thread listens, not draining, and the store answers within a second or is down while its failure mode decides:
 * 200 `degraded` for `open`, 200 for `local`, 503 for `closed`; with the overrides and blocks unknown, 503 for
 * `closed` and 200 `degraded` with `overrides: "unknown"` for `open` and `local`) and `/metrics` (Prometheus text
 * without the per-tenant series, which only the admin listener serves; 404 when `metrics.enabled` is false).
 *
 * @param draining - true once shutdown began: `/ready` answers 503 so that load balancers stop sending.
 */
export async function answerHealth(
  source: HealthSource,
  draining: boolean,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const send = (status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'content-length': Buffer.byteLength(text),
    });
    res.end(req.method === 'HEAD' ? undefined : text);
  };
  if (path === '/health') {
    send(200, { status: 'ok' });
    return;
  }
  if (path === '/ready') {
    if (draining) {
      send(503, { status: 'draining' });
      return;
    }
    if (source.starting) {
      send(503, { status: 'starting' });
      return;
    }
    const store = await storeState(source.runtime);
    const kind = source.store.kind;
    if (store === 'unavailable') {
      send(503, { status: 'store_unavailable', store: kind });
      return;
    }
    const failureMode = source.runtime.config.store.failureMode;
    const known = source.overrides.loaded;
    if (!known && failureMode === 'closed') {
      // Closed mode never trades a limit for availability: no traffic before the blocks are known.
      send(503, { status: 'overrides_unknown', store: kind });
      return;
    }
    if (store === 'admitting' || !known) {
      // The store is down (or its rules were never read) but the failure mode serves: leaving the load balancer
      // would turn every replica's open or local failure mode into a total outage (a pod started during the
      // outage would never become ready), so the gateway stays ready and says what it lacks.
      const mode = store === 'admitting' ? 'open' : failureMode;
      send(200, {
        status: 'degraded',
        store: kind,
        failureMode: mode,
        ...(known ? {} : { overrides: 'unknown' }),
      });
      return;
    }
    send(200, { status: 'ready', store: kind });
    return;
  }
  const metrics = source.runtime.config.metrics;
  if (!metrics.enabled) {
    send(404, { status: 'metrics disabled' });
    return;
  }
  // Any client of the API reads this copy: per-tenant series are the admin listener's only.
  serveMetrics(source, req, res, (text) => withoutTenantSeries(text, metrics.prefix));
}

/**
 * Answers `/metrics`: the scrape's text, 500 without the error (it may name internals) when collecting fails.
 * The proxy listener serves it without a token and without per-tenant series, the admin listener whole, behind
 * its token.
 *
 * @param source - the gateway's metrics.
 * @param select - what of the scrape is served (the proxy listener's leaves out per-tenant series); default all.
 */
export function serveMetrics(
  source: MetricsSource,
  req: IncomingMessage,
  res: ServerResponse,
  select?: (text: string) => string,
): void {
  source.scrape().then(
    (whole) => {
      const text = select === undefined ? whole : select(whole);
      res.writeHead(200, {
        'content-type': source.metrics.registry.contentType,
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
}

/**
 * What a read of a key no one uses tells of the store: it `answers` within its timeout; it is down and its failure
 * mode is `open` (`admitting`); or it is down and denies, or does not answer at all (`unavailable`).
 */
async function storeState(rt: Runtime): Promise<'answers' | 'admitting' | 'unavailable'> {
  const plan = rt.plan;
  try {
    const d = await withTimeout(
      Promise.resolve(plan.limiter.peek([{ policy: plan.publicAuth, key: '\u0000ready' }], 1)),
      STORE_PROBE_MS,
    );
    if (d === undefined || d.reason === 'store_unavailable') return 'unavailable';
    return d.reason === 'store_unavailable_open' ? 'admitting' : 'answers';
  } catch {
    return 'unavailable';
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<undefined>((r) => {
      timer = setTimeout(() => r(undefined), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}
