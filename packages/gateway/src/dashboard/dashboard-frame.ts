/**
 * The messages of the dashboard's event stream (`GET /dashboard/events`), shared by the server and the browser
 * bundle (type-only imports, so nothing of the server reaches the browser).
 */

/**
 * What a series counts. `requests`: one count per request of a tier (channels allowed, limited, exempt).
 * `policy`: one count per policy checked (channels allowed, limited, denied by another policy).
 * `exempt`: exempt requests by reason (channel 0 only). `store`: store trouble (channels errors, decisions
 * admitted by the failure mode, decisions denied by the failure mode).
 */
export type SeriesKind = 'requests' | 'policy' | 'exempt' | 'store';

/** One series of the rate window. */
export interface SeriesInfo {
  /** Stable for the life of the gateway process. */
  readonly id: number;
  readonly kind: SeriesKind;
  /** The policy name (`policy`), the exempt reason (`exempt`), the store kind (`store`), else empty. */
  readonly name: string;
  /** The tier, or empty when none applies (exempt before the identity is known, failed credentials). */
  readonly tier: string;
}

/** The counts of one second; series without counts that second are absent. */
export interface RateRow {
  /** Unix time of the second, in whole seconds. */
  readonly t: number;
  /** Series id to its three channel counts. */
  readonly v: Readonly<Record<string, readonly [number, number, number]>>;
}

/** Store health, as the dashboard shows it. */
export interface StoreHealth {
  /** `memory`, `redis` or another store's kind. */
  readonly kind: string;
  /** The configured failure mode (`open`, `closed`, `local`). */
  readonly failureMode: string;
  /** True while the store cannot answer and the failure mode decides. */
  readonly failureModeActive: boolean;
  /** Buckets held now, when the store reports it. */
  readonly trackedKeys?: number;
  /** The cap on buckets held (memory store). */
  readonly maxTrackedKeys?: number;
  /** Buckets evicted before they were full, since start. */
  readonly evictions?: number;
  /** Full buckets dropped by sampling or the sweeper (change no decision). */
  readonly fullDropped?: number;
  /** Redis only: `redis` or `fallback`, and its counters since start. */
  readonly redis?: {
    readonly state: string;
    readonly errors: number;
    readonly timeouts: number;
    readonly failovers: number;
    readonly recoveries: number;
    readonly fallbackDecisions: number;
    readonly denyCacheSize: number;
  };
}

/** One entry of the top limited keys (keys as keyed hashes only). */
export interface LimitedKeyView {
  readonly hash: string;
  readonly policy: string;
  readonly count: number;
  /** The identity key (without the prefix), when the serving thread limited it lately. */
  readonly key?: string;
  /** Its kind: `tenant-client`, `tenant-user`, `api-key`, `address`... */
  readonly kind?: string;
  /** Tenant and client, address or the rest of the key. */
  readonly who?: string;
  /** The tier of the request last limited. */
  readonly tier?: string;
  /** When it was last limited, epoch milliseconds. */
  readonly lastSeenMs?: number;
}

/** One tenant's usage of its quota over the quota window. */
export interface TenantUsageView {
  readonly tenant: string;
  /** Requests (or cost units) counted over the window. */
  readonly used: number;
  /** The tenant's quota over the window, when known. */
  readonly quota?: number;
  /** `used / quota` (1 means used up), when the quota is known. */
  readonly ratio?: number;
}

/** A list the dashboard shows, or why it cannot. */
export type Insight<T> =
  | { readonly available: true; readonly items: readonly T[]; readonly note?: string }
  | { readonly available: false; readonly reason: string };

/** A concurrency policy's requests in flight (over every key) and its slots per key. */
export interface InFlightView {
  readonly policy: string;
  readonly inFlight: number;
  readonly limit: number;
}

/** Load shedding (`overload:`): the limit in effect, the requests counted toward it, and those shed so far. */
export interface OverloadView {
  readonly limit: number;
  readonly inFlight: number;
  /** Requests shed since the gateway started, by priority: critical, normal, sheddable. */
  readonly shed: readonly [number, number, number];
}

/** Capacity protection as the dashboard shows it; absent when neither part is configured. */
export interface CapacityView {
  readonly concurrency: readonly InFlightView[];
  readonly overload?: OverloadView;
}

/** Units charged to a policy whose cost is settled from the response (`cost:`, `count:`), since start. */
export interface UnitsView {
  readonly policy: string;
  /** `tokens`, `bytes`, `units` (an upstream header) or `requests` (`count:`). */
  readonly unit: string;
  readonly units: number;
}

/** The slow-changing state sent with every tick. */
export interface DashboardStatus {
  /** Unix milliseconds when the status was taken. */
  readonly at: number;
  readonly store: StoreHealth;
  /** Requests being served by the gateway now. */
  readonly inflight: number;
  /** Bumped whenever the effective configuration changes (a reload): the page fetches `/config` again. */
  readonly configVersion: number;
  readonly topLimitedKeys: Insight<LimitedKeyView>;
  readonly topTenants: Insight<TenantUsageView> & { readonly thresholds?: readonly number[] };
  /** Concurrency policies and load shedding, when configured. */
  readonly capacity?: CapacityView;
  /** Units charged per policy whose cost is settled from the response, when any is configured. */
  readonly units?: readonly UnitsView[];
}

/** The first message of a stream: the whole history. */
export interface SnapshotMessage {
  /** Seconds of history kept by the server. */
  readonly historySeconds: number;
  readonly series: readonly SeriesInfo[];
  /** Completed seconds, oldest first. */
  readonly rows: readonly RateRow[];
  readonly status: DashboardStatus;
}

/** Every following message: the seconds completed since the previous one, and series new since then. */
export interface TickMessage {
  readonly series: readonly SeriesInfo[];
  readonly rows: readonly RateRow[];
  readonly status: DashboardStatus;
}
