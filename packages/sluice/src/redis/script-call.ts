import type { RedisScriptClient } from './client-adapter.js';
import { SCRIPT, SCRIPT_SHA } from './lua-script.js';

function isNoScript(error: unknown): boolean {
  return String((error as { message?: unknown } | undefined)?.message ?? error).includes('NOSCRIPT');
}

/**
 * Runs the rate-limit script by its SHA. When the server lost its script cache (restart, failover, SCRIPT FLUSH),
 * EVAL runs it and caches it again, for this call only. Not async: a call answered at once costs no extra promise.
 *
 * @param counters - its `scriptReloads` counts the calls that had to send the script whole.
 */
export function callScript(
  client: RedisScriptClient,
  keys: string[],
  args: string[],
  counters: { scriptReloads: number },
): Promise<unknown> {
  return client.evalsha(SCRIPT_SHA, keys, args).catch((error: unknown) => {
    if (!isNoScript(error)) throw error;
    counters.scriptReloads++;
    return client.eval(SCRIPT, keys, args);
  });
}
