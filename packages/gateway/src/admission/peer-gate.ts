import type { Socket } from 'node:net';
import { type IpRange, inRanges, normalizeIp } from 'sluice/http';
import type { Logger } from '../log/create-logger.js';

/** The shortest time between two warnings of refused connections of one kind: one line per flood. */
const WARNING_INTERVAL_MS = 60_000;

/** What a {@link PeerGate} reads for each connection: the settings in effect, so a reload applies to the next one. */
export interface PeerGateSettings {
  /** The peers allowed to connect (parsed `allowedPeers`). */
  readonly peers: readonly IpRange[];
  /** Connections held at once; `0` is no cap. */
  readonly maxConnections: number;
}

/** Options of a {@link PeerGate}. */
export interface PeerGateOptions {
  /** The configuration section, named in warnings: `decision` or `envoy`. */
  readonly section: string;
  /** The settings in effect. */
  readonly settings: () => PeerGateSettings;
  readonly logger: Logger;
  /** Monotonic milliseconds, for the warning interval; default `performance.now`. */
  readonly now?: () => number;
  /**
   * Runs `task` once after `ms` milliseconds, for the count of a flood's later refusals; default an unref'd
   * `setTimeout`, so a pending count never keeps the process alive.
   */
  readonly later?: (task: () => void, ms: number) => void;
}

const unrefLater = (task: () => void, ms: number): void => {
  setTimeout(task, ms).unref();
};

/**
 * Admits or refuses the connections of a listener whose callers are other proxies (the decision API, the Envoy
 * rate limit service) as they are accepted, before a byte is read: a peer outside `allowedPeers` and a
 * connection past `maxConnections` are destroyed. A refused peer thus holds no descriptor and no parser, and
 * cannot keep connections open that it could never use. Refusals are logged at `warn`, at most once a minute for
 * each kind, with their count: the peer sees only a reset, so the log is where a wrong `allowedPeers` shows.
 */
export class PeerGate {
  readonly #options: PeerGateOptions;
  readonly #now: () => number;
  readonly #warnedAt = { peer: Number.NEGATIVE_INFINITY, total: Number.NEGATIVE_INFINITY };
  readonly #unreported = { peer: 0, total: 0 };
  /** Whether a report of the refusals after a warning is scheduled, per kind: one timer per gate and kind. */
  readonly #scheduled = { peer: false, total: false };
  /** The last refused peer per kind, named in the report of a flood's later refusals. */
  readonly #lastPeer = { peer: '', total: '' };
  #open = 0;

  /** @param options - the settings, logger and clock. */
  constructor(options: PeerGateOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Connections admitted and still open. */
  get open(): number {
    return this.#open;
  }

  /**
   * Admits a socket just accepted, or destroys it.
   *
   * @returns true when admitted (it holds a slot until it closes).
   */
  admit(socket: Socket): boolean {
    const { peers, maxConnections } = this.#options.settings();
    const raw = socket.remoteAddress;
    const peer = raw === undefined ? undefined : normalizeIp(raw);
    if (peer === undefined || !inRanges(peer, peers)) return this.#refuse(socket, 'peer', raw ?? 'unknown');
    if (maxConnections > 0 && this.#open >= maxConnections) return this.#refuse(socket, 'total', peer);
    this.#open++;
    socket.once('close', () => this.#open--);
    return true;
  }

  #refuse(socket: Socket, kind: 'peer' | 'total', peer: string): false {
    // A reset can still raise an error on the socket; nobody else listens to it yet.
    socket.on('error', () => undefined);
    socket.destroy();
    this.#unreported[kind]++;
    this.#lastPeer[kind] = peer;
    const since = this.#now() - this.#warnedAt[kind];
    if (since >= WARNING_INTERVAL_MS) this.#warn(kind);
    else if (!this.#scheduled[kind]) {
      // The refusals after a warning are reported when the interval ends, even when the flood stops before it:
      // otherwise the first line of a flood (refused: 1) would be all the log ever says about it.
      this.#scheduled[kind] = true;
      (this.#options.later ?? unrefLater)(() => {
        this.#scheduled[kind] = false;
        if (this.#unreported[kind] > 0) this.#warn(kind);
      }, WARNING_INTERVAL_MS - since);
    }
    return false;
  }

  #warn(kind: 'peer' | 'total'): void {
    this.#warnedAt[kind] = this.#now();
    const refused = this.#unreported[kind];
    this.#unreported[kind] = 0;
    const peer = this.#lastPeer[kind];
    const { section, logger } = this.#options;
    if (kind === 'peer') {
      logger.warn(
        { peer, refused },
        `connections refused: the peer is not in ${section}.allowedPeers (closed before reading)`,
      );
    } else {
      const { maxConnections } = this.#options.settings();
      logger.warn(
        { open: this.#open, refused, maxConnections },
        `connections refused: the listener is at ${section}.maxConnections`,
      );
    }
  }
}
