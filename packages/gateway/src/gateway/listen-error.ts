/**
 * Runs a listener's start and names the option behind it in a failure. `listen EADDRINUSE: address already in
 * use 127.0.0.1:9191` alone leaves the operator to map the port back to the file; the gateway opens up to four
 * listeners, each from its own `*.port`.
 *
 * @param option - the option that sets the port, for example `admin.port`.
 * @param listener - what listens there, for example `the admin listener`.
 * @param start - starts the listener.
 * @returns what `start` resolves with.
 * @throws Error whose message starts with the option and the listener, then the original message; its `code`
 *   (for example `EADDRINUSE`) is kept and the original error is its `cause`.
 */
export async function listenAs<T>(option: string, listener: string, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (e) {
    throw namedListenError(option, listener, e);
  }
}

/**
 * A listen error with the option and the listener it came from in front of its message.
 *
 * @param option - the option that sets the port.
 * @param listener - what listens there.
 * @param e - the error as Node.js or gRPC reported it.
 */
export function namedListenError(option: string, listener: string, e: unknown): Error {
  const message = e instanceof Error ? e.message : String(e);
  const named = new Error(`${option} (${listener}): ${message}`, { cause: e });
  const code = (e as { code?: unknown } | undefined)?.code;
  if (code !== undefined) (named as Error & { code?: unknown }).code = code;
  return named;
}
