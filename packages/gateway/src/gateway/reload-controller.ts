import type { RateLimitStore } from 'sluice';
import { Runtime } from '../admission/runtime.js';
import { noUpstreamMessage, servesNothing } from '../config/config-warnings.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { type ConfigOverrides, loadConfigText, readConfigSource } from '../config/load-config.js';
import type { Violation } from '../config/violation.js';
import type { Logger } from '../log/create-logger.js';
import { logConfigWarnings } from '../log/log-config-warnings.js';
import { logRejectedReload } from '../log/log-rejected-reload.js';
import { sourceVersion } from './config-source.js';
import { watchConfigFile } from './config-watch.js';
import { restartRequired } from './restart-settings.js';

/** The outcome of a reload. */
export interface ReloadResult {
  readonly ok: boolean;
  readonly violations: readonly Violation[];
  /** Settings that changed but only take effect after a restart (listeners, TLS, store); see `SETTINGS`. */
  readonly restartRequired: readonly string[];
}

/** Options of {@link ReloadController}. */
export interface ReloadOptions {
  /** The runtime built at start. */
  readonly runtime: Runtime;
  /** The store every runtime shares, so that unchanged policies keep their buckets. */
  readonly store: RateLimitStore;
  readonly logger: Logger;
  /** The file to read; default the file the configuration in effect came from. */
  readonly file?: string;
  /** Command-line values re-applied on every reload, so a flag keeps winning over the file. */
  readonly overrides?: ConfigOverrides;
  /** Variables for `${NAME}`; default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Called after each reload attempt, valid or not. */
  readonly onReload: (result: ReloadResult) => void;
}

/**
 * Holds the runtime in effect and replaces it from the configuration file, on demand (SIGHUP, the admin API) or
 * when the file changes. A valid file swaps the runtime as a whole; an invalid one changes nothing.
 */
export class ReloadController {
  readonly #options: ReloadOptions;
  #runtime: Runtime;
  #unwatch: (() => void) | undefined;

  constructor(options: ReloadOptions) {
    this.#options = options;
    this.#runtime = options.runtime;
  }

  /** The runtime in effect; requests read it once when they start. */
  get runtime(): Runtime {
    return this.#runtime;
  }

  /** The file reloads read, or `undefined` for a configuration that did not come from a file. */
  get file(): string | undefined {
    return this.#options.file ?? this.#runtime.config.file;
  }

  /**
   * Reads the configuration file again. A valid file replaces the runtime; policies whose limits did not change
   * keep their buckets; settings bound at start are reported, not applied. Every violation is logged.
   *
   * @param source - the file's text as another thread read it (the main thread of `sluice serve --threads`,
   * which reads the file once for every thread); absent, the file is read here.
   */
  reload(source?: string): ReloadResult {
    const file = this.file;
    const result: ReloadResult =
      file === undefined
        ? { ok: false, violations: [violation('no configuration file to reload')], restartRequired: [] }
        : this.#reloadFrom(file, source);
    this.#options.onReload(result);
    return result;
  }

  /**
   * Reloads when the file changes. The folder is watched: editors and config management replace files by renaming.
   *
   * @param loaded - the text the runtime in effect was loaded from, when known: a file that differs from it once
   * the watch is attached (saved since it was read) is reloaded.
   */
  watch(loaded?: string): void {
    const file = this.file;
    if (file === undefined) return;
    this.#unwatch = watchConfigFile(file, () => this.reload(), this.#options.logger, loaded);
  }

  /** Stops watching. */
  close(): void {
    this.#unwatch?.();
  }

  #reloadFrom(file: string, given: string | undefined): ReloadResult {
    const { logger, env, overrides } = this.#options;
    let loaded: ReturnType<typeof loadConfigText>;
    let source: string;
    try {
      source = given ?? readConfigSource(file);
      loaded = loadConfigText(source, file, { env, overrides });
    } catch (e) {
      const v = violation((e as Error).message);
      logger.error({ file, violation: v }, 'configuration reload failed; keeping the current configuration');
      return { ok: false, violations: [v], restartRequired: [] };
    }
    const old = this.#runtime;
    const violations = loaded.ok ? lostUpstream(old.config, loaded.config, file) : loaded.violations;
    if (!loaded.ok || violations.length > 0) {
      logRejectedReload(logger, file, violations);
      return { ok: false, violations, restartRequired: [] };
    }
    let next: Runtime;
    try {
      next = new Runtime(loaded.config, this.#options.store, old);
    } catch (e) {
      const v = violation((e as Error).message);
      logger.error(
        { file, violation: v },
        'configuration reload rejected; keeping the current configuration',
      );
      return { ok: false, violations: [v], restartRequired: [] };
    }
    const restart = restartRequired(old.config, loaded.config);
    this.#runtime = next;
    if (old.proxy !== undefined && old.proxy !== next.proxy) void old.proxy.close();
    if (restart.length > 0)
      logger.warn({ settings: restart }, 'changed settings take effect after a restart');
    logConfigWarnings(logger, loaded.warnings, file);
    logger.info(
      { file, version: sourceVersion(source), policies: next.plan.limiter.policies.length },
      'configuration reloaded',
    );
    return { ok: true, violations: [], restartRequired: restart };
  }
}

/**
 * The violation of a reload that would leave the gateway with nothing to serve (no upstream, no decision API, no
 * Envoy service), which `sluice serve` refuses at start with the same message; empty otherwise. A gateway started
 * without any (only through the API: the command refuses it) may reload such a file: nothing is taken away.
 *
 * @param running - the configuration in effect.
 * @param next - the configuration read.
 * @param file - the configuration file, named in the message.
 */
export function lostUpstream(running: GatewayConfig, next: GatewayConfig, file: string): Violation[] {
  if (!servesNothing(next) || servesNothing(running)) return [];
  return [{ path: 'upstream.url', line: 0, column: 0, message: noUpstreamMessage(file) }];
}

function violation(message: string): Violation {
  return { path: '', line: 0, column: 0, message };
}
