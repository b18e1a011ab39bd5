import type { IncomingMessage, ServerResponse } from 'node:http';
import { integerOption, invalidOption, objectOption, type RateLimitStore, rejectUnknownKeys } from 'sluice';
import type { Runtime } from '../admission/runtime.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { redactUrls } from '../config/redact.js';
import { capacityView, type PeerInFlight } from './capacity-view.js';
import { DashboardAssets } from './dashboard-assets.js';
import type {
  DashboardStatus,
  Insight,
  LimitedKeyView,
  SnapshotMessage,
  TenantUsageView,
  TickMessage,
} from './dashboard-frame.js';
import { RateWindow } from './rate-window.js';
import { storeHealth } from './store-health.js';
import { type PeerUnits, unitsView } from './units-view.js';

/** What the dashboard reads from the gateway. */
export interface DashboardSource {
  /** The configuration in effect (replaced on reload). */
  readonly config: GatewayConfig;
  readonly store: RateLimitStore;
  /** Requests being served now. */
  readonly inflight: number;
  /** The configuration in effect as built (concurrency policies, load shedding), when the host has one. */
  readonly runtime?: Runtime;
  /** As the first thread of `sluice serve --threads`, the other threads' figures, added to this thread's. */
  readonly peers?: (PeerInFlight & PeerUnits) | undefined;
}

/** The top limited keys, as `TopLimitedKeys` (sluice/quota) gives them. */
export interface TopKeysSource {
  top(n: number): readonly { readonly hash: string; readonly policy: string; readonly count: number }[];
}

/** Tenant quota usage, as `QuotaTracker` (sluice/quota) gives it. */
export interface QuotaSource {
  readonly thresholds: readonly number[];
  readonly windowSeconds: number;
  topTenants(n: number): Promise<
    readonly {
      readonly tenant: string;
      readonly total: number;
      readonly quota: number | undefined;
      readonly ratio: number | undefined;
    }[]
  >;
}

/** Options of {@link Dashboard}. */
export interface DashboardOptions {
  /** The per-second counts the gateway records into. */
  readonly rates: RateWindow;
  /** The top limited keys; the panel says it is not available without them. */
  readonly topLimitedKeys?: TopKeysSource;
  /** Tenant quota tracking; the panel says it is not configured without it. */
  readonly quota?: QuotaSource;
  /** What each limited key is (kind, tenant and client or address, tier, last seen), joined by hash. */
  readonly keyFacts?: { of(hash: string): Omit<LimitedKeyView, 'hash' | 'count'> | undefined };
  /** Milliseconds between two updates of every open stream. Integer from 100 to 60,000; default 1,000. */
  readonly intervalMs?: number;
  /** Open event streams at most; more get 503. Integer from 1 to 1,000; default 32. */
  readonly maxStreams?: number;
  /** Entries shown in each top list. Integer from 1 to 100; default 10. */
  readonly topN?: number;
  /** The folder of the built bundle; default `dist/dashboard-assets` of this package. */
  readonly assetsDir?: string;
  /** Wall-clock milliseconds; default `Date.now`. */
  readonly wallNow?: () => number;
}

interface Stream {
  readonly res: ServerResponse;
  /** The newest clock second sent. */
  sent: number;
  /** Series sent so far. */
  known: number;
}

/** A stream whose client reads slower than this many buffered bytes is closed; the page reconnects. */
const MAX_BUFFERED = 1 << 20;
const PREFIX = '/dashboard';

/**
 * The live dashboard of the admin listener: the page and its bundle (served without the token: they hold no
 * data), and the data behind the admin token: `GET /dashboard/events`, a server-sent event stream (a `snapshot`
 * with the whole history, then a `tick` per interval with the seconds completed since), and
 * `GET /dashboard/state`, the same snapshot as one JSON document. Inspecting and resetting a key, and the
 * configuration, use the admin API itself (`/keys/<key>`, `/config`).
 *
 * The admin server calls {@link Dashboard.serveAsset} before its token check and {@link Dashboard.serveData}
 * after it, so the token check stays in one place.
 *
 * @example
 * ```ts
 * const rates = new RateWindow();
 * const dashboard = new Dashboard(gateway, { rates });
 * // in the admin server: if (dashboard.serveAsset(req, res)) return; ...check the token...;
 * // if (dashboard.serveData(req, res, notAllowed)) return;
 * ```
 */
export class Dashboard {
  readonly rates: RateWindow;
  readonly #source: DashboardSource;
  readonly #assets: DashboardAssets;
  readonly #topKeys: TopKeysSource | undefined;
  readonly #keyFacts: DashboardOptions['keyFacts'];
  readonly #quota: QuotaSource | undefined;
  readonly #intervalMs: number;
  readonly #maxStreams: number;
  readonly #topN: number;
  readonly #wallNow: () => number;
  readonly #streams = new Set<Stream>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #ticking = false;
  #config: GatewayConfig | undefined;
  #configVersion = 0;

  /**
   * @param source - the gateway.
   * @param options - the rate window and the optional insight sources.
   * @throws SluiceError `ERR_INVALID_OPTION` for an invalid option.
   */
  constructor(source: DashboardSource, options: DashboardOptions) {
    const o = objectOption('Dashboard options', options) as unknown as DashboardOptions;
    rejectUnknownKeys('Dashboard options', o, [
      'rates',
      'topLimitedKeys',
      'quota',
      'keyFacts',
      'intervalMs',
      'maxStreams',
      'topN',
      'assetsDir',
      'wallNow',
    ]);
    if (!(o.rates instanceof RateWindow)) throw invalidOption('rates', 'a RateWindow', o.rates);
    this.#source = source;
    this.rates = o.rates;
    this.#topKeys = o.topLimitedKeys;
    this.#quota = o.quota;
    this.#keyFacts = o.keyFacts;
    this.#intervalMs = integerOption('intervalMs', o.intervalMs, 100, 60_000, 1000);
    this.#maxStreams = integerOption('maxStreams', o.maxStreams, 1, 1000, 32);
    this.#topN = integerOption('topN', o.topN, 1, 100, 10);
    this.#assets = new DashboardAssets(o.assetsDir);
    this.#wallNow = o.wallNow ?? Date.now;
  }

  /** Open event streams. */
  get streams(): number {
    return this.#streams.size;
  }

  /**
   * Answers the page and its files (`GET /dashboard/`, `/dashboard/app.js`, ...), which need no token, and
   * sends a browser asking for `/` to the page.
   *
   * @returns true when answered.
   */
  serveAsset(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const path = pathOf(req);
    if (path === '/' && (req.headers.accept ?? '').includes('text/html')) {
      redirect(res, `${PREFIX}/`);
      return true;
    }
    if (path === PREFIX) {
      redirect(res, `${PREFIX}/`);
      return true;
    }
    if (!path.startsWith(`${PREFIX}/`)) return false;
    const name = path.slice(PREFIX.length + 1);
    if (name === 'events' || name === 'state') return false;
    return this.#assets.serve(name === '' ? 'index.html' : name, req, res);
  }

  /**
   * Answers the data routes; call it only for a request whose admin token was verified.
   *
   * @param notAllowed - answers a method the routes do not take (the admin listener's 405 problem with Allow).
   * @returns true when answered.
   */
  serveData(req: IncomingMessage, res: ServerResponse, notAllowed: (allow: string) => void): boolean {
    const path = pathOf(req);
    if (path !== `${PREFIX}/events` && path !== `${PREFIX}/state`) return false;
    if (req.method !== 'GET') {
      notAllowed('GET');
      return true;
    }
    if (path === `${PREFIX}/state`) void this.#state(res);
    else void this.#open(req, res);
    return true;
  }

  /** The status sent with every message: store health, in-flight requests, top lists, configuration version. */
  async status(): Promise<DashboardStatus> {
    const s = this.#source;
    if (s.config !== this.#config) {
      this.#config = s.config;
      this.#configVersion++;
    }
    return {
      at: this.#wallNow(),
      store: storeHealth(s.store, s.config.store.failureMode, this.rates.failoverActive),
      inflight: s.inflight,
      configVersion: this.#configVersion,
      topLimitedKeys: this.#topLimitedKeys(),
      topTenants: await this.#topTenants(),
      capacity: capacityView(s.runtime, s.peers),
      units: unitsView(s.runtime, s.peers),
    };
  }

  /** The whole history and the status, as the first message of a stream. */
  async snapshot(): Promise<SnapshotMessage & { readonly last: number }> {
    const status = await this.status();
    const last = this.rates.lastCompleted();
    const rows = this.rates.rowsAfter(Number.NEGATIVE_INFINITY, last);
    return { historySeconds: this.rates.historySeconds, series: this.rates.series(), rows, status, last };
  }

  /**
   * Sends one update to every open stream now (the timer does this every interval).
   */
  async tick(): Promise<void> {
    if (this.#ticking || this.#streams.size === 0) return;
    this.#ticking = true;
    try {
      const status = await this.status();
      const last = this.rates.lastCompleted();
      for (const stream of this.#streams) {
        const rows = this.rates.rowsAfter(stream.sent, last);
        const series = this.rates.seriesAfter(stream.known);
        const message: TickMessage = { series, rows, status };
        stream.sent = Math.max(stream.sent, last);
        stream.known += series.length;
        this.#send(stream, 'tick', message);
      }
    } finally {
      this.#ticking = false;
    }
  }

  /** Ends every stream and stops the timer. */
  close(): void {
    for (const s of [...this.#streams]) s.res.end();
    this.#streams.clear();
    this.#stopTimer();
  }

  async #state(res: ServerResponse): Promise<void> {
    const { last: _last, ...snapshot } = await this.snapshot();
    const text = JSON.stringify(snapshot);
    res.writeHead(200, {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  }

  async #open(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.#streams.size >= this.#maxStreams) {
      res.writeHead(503, {
        'content-type': 'application/json',
        'cache-control': 'no-store',
        'retry-after': '5',
      });
      res.end(JSON.stringify({ error: 'too_many_streams', max: this.#maxStreams }));
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    });
    req.socket.setNoDelay(true);
    const { last, ...snapshot } = await this.snapshot();
    const stream: Stream = { res, sent: last, known: snapshot.series.length };
    if (res.destroyed) return;
    this.#streams.add(stream);
    res.once('close', () => {
      this.#streams.delete(stream);
      if (this.#streams.size === 0) this.#stopTimer();
    });
    res.write(`retry: ${Math.max(1000, this.#intervalMs)}\n\n`);
    this.#send(stream, 'snapshot', snapshot);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => void this.tick().catch(() => undefined), this.#intervalMs);
      // The admin listener closes the streams on shutdown; the timer must not hold the process open by itself.
      this.#timer.unref();
    }
  }

  #send(stream: Stream, event: string, data: unknown): void {
    const res = stream.res;
    if (res.destroyed || res.writableEnded) return;
    if (res.writableLength > MAX_BUFFERED) {
      // A client that stopped reading: end it rather than buffer without bound; the page reconnects.
      res.destroy();
      return;
    }
    // JSON.stringify writes no newline, so one data line carries the whole message.
    res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #topLimitedKeys(): Insight<LimitedKeyView> {
    if (this.#topKeys === undefined) {
      return { available: false, reason: 'The gateway does not track limited keys.' };
    }
    const items = this.#topKeys.top(this.#topN).map(({ hash, policy, count }) => {
      const f = this.#keyFacts?.of(hash);
      return f === undefined
        ? { hash, policy, count }
        : {
            hash,
            count,
            key: f.key,
            kind: f.kind,
            who: f.who,
            tier: f.tier,
            policy: f.policy ?? policy,
            lastSeenMs: f.lastSeenMs,
          };
    });
    return { available: true, items };
  }

  async #topTenants(): Promise<Insight<TenantUsageView> & { readonly thresholds?: readonly number[] }> {
    const q = this.#quota;
    if (q === undefined) {
      return {
        available: false,
        reason: 'Tenant quota tracking is not configured on this gateway.',
      };
    }
    try {
      const rows = await q.topTenants(this.#topN);
      return {
        available: true,
        thresholds: q.thresholds,
        note: `over the last ${formatWindow(q.windowSeconds)}`,
        items: rows.map((r) => ({
          tenant: r.tenant,
          used: r.total,
          ...(r.quota === undefined ? {} : { quota: r.quota }),
          ...(r.ratio === undefined ? {} : { ratio: r.ratio }),
        })),
      };
    } catch (e) {
      // A store error may quote its connection URL: the page shows it without the password.
      return {
        available: false,
        reason: `The quota store did not answer: ${redactUrls((e as Error).message)}`,
      };
    }
  }
}

function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

function redirect(res: ServerResponse, location: string): void {
  res.writeHead(303, { location, 'cache-control': 'no-store', 'content-length': 0 });
  res.end();
}

function formatWindow(seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? 'hour' : `${seconds / 3600} hours`;
  if (seconds % 60 === 0) return seconds === 60 ? 'minute' : `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}
