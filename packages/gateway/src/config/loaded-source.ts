import type { GatewayConfig } from './gateway-config.js';

const sources = new WeakMap<GatewayConfig, string>();

/**
 * Records the text a configuration was loaded from, for {@link loadedSource}.
 *
 * @param config - the loaded configuration.
 * @param text - the YAML text it came from.
 */
export function rememberSource(config: GatewayConfig, text: string): void {
  sources.set(config, text);
}

/**
 * The text a configuration was loaded from, when `loadConfigText`, `loadConfigFile` or `loadConfigOrThrow` made
 * it; `undefined` for a configuration built otherwise. The gateway's file watch compares the file with it when
 * it attaches, so that a save made since the file was read is applied.
 *
 * @param config - a configuration.
 */
export function loadedSource(config: GatewayConfig): string | undefined {
  return sources.get(config);
}
