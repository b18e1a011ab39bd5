/**
 * The listen address `sluice serve` and `sluice validate` fall back on when neither `--host` nor `server.host`
 * names one: `SLUICE_DEFAULT_HOST`. The container image sets it to `0.0.0.0`, because a gateway on the
 * container's own loopback cannot be reached through a published port (and its health check, asking 127.0.0.1,
 * would still pass). Without it the default stays `127.0.0.1`.
 *
 * @param env - the environment.
 * @returns the trimmed value, or undefined when it is absent or empty.
 *
 * @example
 * ```ts
 * loadConfigFile(file, { overrides: { host: flags.host, defaultHost: defaultHost(process.env) } });
 * ```
 */
export function defaultHost(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const host = env.SLUICE_DEFAULT_HOST?.trim();
  return host === undefined || host === '' ? undefined : host;
}
