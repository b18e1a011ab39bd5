import promClient from 'prom-client';
import { ipKey } from 'sluice/http';
import type { Runtime } from '../admission/runtime.js';
import { maxConnectionsWarning } from '../config/config-warnings.js';
import type { Logger } from '../log/create-logger.js';
import { logConfigWarnings } from '../log/log-config-warnings.js';
import { ConnectionCounts } from '../server/connection-counts.js';
import { ListenerGate } from '../server/listener-gate.js';
import { capExceedsFileLimit, defaultMaxConnections, openFileLimit } from '../server/open-file-limit.js';

/**
 * The shortest time between two warnings of connections refused at one cap: one line per flood, not per
 * connection. Each cap has its own interval and count, so a full listener is reported even right after a client
 * reached its own cap.
 */
const WARNING_INTERVAL_MS = 60_000;

/** What {@link connectionLimits} needs of the gateway. */
export interface ConnectionLimitsHost {
  /** The configuration in effect: the caps are read from it for each connection. */
  readonly runtime: () => Runtime;
  readonly logger: Logger;
  /** The registry and the metric name prefix. */
  readonly metrics: { readonly registry: promClient.Registry; readonly prefix: string };
  /** The counts shared by the threads of `sluice serve --threads`; a table of its own otherwise. */
  readonly counts?: ConnectionCounts;
  /** The configuration file, named in the warning of a cap above the open file limit. */
  readonly file?: string | undefined;
}

/** The gate of the proxy listener and the cap it applies. */
export interface ConnectionLimits {
  /** The gate to hand the proxy listener. */
  readonly gate: ListenerGate;
  /**
   * The cap on the proxy listener's connections in force: `server.maxConnections` of the configuration in effect,
   * or the default derived from the open file limit at start when it is not set (`0`: no cap).
   */
  maxConnections(): number;
}

/**
 * The gate of the proxy listener's connections (`server.maxConnections`, `server.maxConnectionsPerClient`),
 * reported as it refuses: a counter by cap in the gateway's registry (`<prefix>_connections_refused_total`), a
 * gauge of the connections open over the process (`<prefix>_connections_open`), and at most one warning a minute
 * for each cap, with the refusals at that cap since its last warning. Without `server.maxConnections` the cap is
 * derived from the open file limit, once; a cap set above what that limit leaves room for is warned about here,
 * at start (`W_MAX_CONNECTIONS_FILE_LIMIT`).
 */
export function connectionLimits(host: ConnectionLimitsHost): ConnectionLimits {
  const { registry, prefix } = host.metrics;
  const counts = host.counts ?? ConnectionCounts.create();
  const fileLimit = openFileLimit();
  const derived = defaultMaxConnections(fileLimit);
  const configured = host.runtime().config.server.maxConnections;
  if (configured !== undefined && fileLimit !== undefined && capExceedsFileLimit(configured, fileLimit))
    logConfigWarnings(host.logger, [maxConnectionsWarning(configured, fileLimit)], host.file);
  const refused = new promClient.Counter({
    name: `${prefix}_connections_refused_total`,
    help: 'Connections the proxy listener refused at a cap, by cap: total (server.maxConnections) or client (server.maxConnectionsPerClient).',
    labelNames: ['reason'],
    registers: [registry],
  });
  new promClient.Gauge({
    name: `${prefix}_connections_open`,
    help: 'Connections open on the proxy listener, over every thread of the process.',
    registers: [registry],
    collect() {
      this.set(counts.open);
    },
  });
  const maxConnections = () => host.runtime().config.server.maxConnections ?? derived;
  const warnings = { total: new RefusalWarning(), client: new RefusalWarning() };
  const gate = new ListenerGate({
    counts,
    caps: () => {
      const s = host.runtime().config.server;
      return { total: maxConnections(), perClient: s.maxConnectionsPerClient };
    },
    clientKey: (peer) => (peer === undefined || host.runtime().trustedPeer(peer) ? undefined : ipKey(peer)),
    onRefused: (reason, caps) => {
      refused.inc({ reason });
      const count = warnings[reason].refused(performance.now());
      if (count === 0) return;
      host.logger.warn(
        {
          reason,
          refused: count,
          open: counts.open,
          maxConnections: caps.total,
          maxConnectionsPerClient: caps.perClient,
        },
        reason === 'total'
          ? 'connections refused: the proxy listener is at server.maxConnections'
          : 'connections refused: a client is at server.maxConnectionsPerClient',
      );
    },
  });
  return { gate, maxConnections };
}

/** The warnings of one cap: at most one per {@link WARNING_INTERVAL_MS}, each with the refusals since the last. */
class RefusalWarning {
  #warnedAt = Number.NEGATIVE_INFINITY;
  #unreported = 0;

  /**
   * Counts a refusal at `now` (milliseconds).
   *
   * @returns the refusals to report now (this one included), or 0 while the last warning is too recent.
   */
  refused(now: number): number {
    this.#unreported++;
    if (now - this.#warnedAt < WARNING_INTERVAL_MS) return 0;
    this.#warnedAt = now;
    const count = this.#unreported;
    this.#unreported = 0;
    return count;
  }
}
