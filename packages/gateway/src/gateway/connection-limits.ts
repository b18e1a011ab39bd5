import promClient from 'prom-client';
import { ipKey } from 'sluice/http';
import type { Runtime } from '../admission/runtime.js';
import type { Logger } from '../log/create-logger.js';
import { ConnectionCounts } from '../server/connection-counts.js';
import { ListenerGate } from '../server/listener-gate.js';
import { capExceedsFileLimit, defaultMaxConnections, openFileLimit } from '../server/open-file-limit.js';

/** The shortest time between two warnings of refused connections: one line per flood, not per connection. */
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
}

/**
 * The gate of the proxy listener's connections (`server.maxConnections`, `server.maxConnectionsPerClient`),
 * reported as it refuses: a counter by cap in the gateway's registry (`<prefix>_connections_refused_total`), a
 * gauge of the connections open over the process (`<prefix>_connections_open`), and one warning a minute at most.
 * Without `server.maxConnections` the cap is derived from the open file limit, once; a cap set above what that
 * limit leaves room for is warned about here, at start.
 *
 * @returns the gate to hand the proxy listener.
 */
export function connectionLimits(host: ConnectionLimitsHost): ListenerGate {
  const { registry, prefix } = host.metrics;
  const counts = host.counts ?? ConnectionCounts.create();
  const fileLimit = openFileLimit();
  const derived = defaultMaxConnections(fileLimit);
  const configured = host.runtime().config.server.maxConnections;
  if (configured !== undefined && capExceedsFileLimit(configured, fileLimit)) {
    host.logger.warn(
      { maxConnections: configured, openFileLimit: fileLimit },
      'server.maxConnections leaves too few file descriptors for the rest of the gateway (each proxied connection may need two); raise the open file limit (ulimit -n) or lower the cap',
    );
  }
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
  let warnedAt = Number.NEGATIVE_INFINITY;
  let unreported = 0;
  return new ListenerGate({
    counts,
    caps: () => {
      const s = host.runtime().config.server;
      return { total: s.maxConnections ?? derived, perClient: s.maxConnectionsPerClient };
    },
    clientKey: (peer) => (peer === undefined || host.runtime().trustedPeer(peer) ? undefined : ipKey(peer)),
    onRefused: (reason, caps) => {
      refused.inc({ reason });
      unreported++;
      const t = performance.now();
      if (t - warnedAt < WARNING_INTERVAL_MS) return;
      warnedAt = t;
      host.logger.warn(
        {
          reason,
          refused: unreported,
          open: counts.open,
          maxConnections: caps.total,
          maxConnectionsPerClient: caps.perClient,
        },
        reason === 'total'
          ? 'connections refused: the proxy listener is at server.maxConnections'
          : 'connections refused: a client is at server.maxConnectionsPerClient',
      );
      unreported = 0;
    },
  });
}
