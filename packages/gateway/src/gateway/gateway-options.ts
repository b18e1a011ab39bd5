import type { Clock } from 'sluice';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { ConfigOverrides } from '../config/load-config.js';
import type { Logger } from '../log/create-logger.js';
import type { GatewayThread } from './thread-messages.js';

/** Options of `Gateway.start`. */
export interface GatewayOptions {
  /** The resolved configuration (from `loadConfigFile`). */
  readonly config: GatewayConfig;
  /** The file to reload on SIGHUP or change; default `config.file`. */
  readonly configFile?: string;
  /** Command-line values re-applied on every reload, so a flag keeps winning over the file. */
  readonly overrides?: ConfigOverrides;
  /** Variables for `${NAME}` on reload; default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The logger; default pino on standard output at `logging.level`. */
  readonly logger?: Logger;
  /** The store's clock (a `ManualClock` in tests); default monotonic time. Only the memory store uses it. */
  readonly clock?: Clock;
  /** Wall-clock milliseconds for `X-RateLimit-Reset` and the problem's `reset`; default `Date.now`. */
  readonly now?: () => number;
  /** Watch the file for changes; default `config.reload.watch` when there is a file. */
  readonly watch?: boolean;
  /** One of several threads (`sluice serve --threads`): see {@link GatewayThread}. */
  readonly thread?: GatewayThread;
}
