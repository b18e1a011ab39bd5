import { randomUUID } from 'node:crypto';
import { isValidCorrelationId } from 'sluice/http';

/**
 * The request id: the one the client or an outer proxy sent, when `sluice/http` finds it safe to echo (short and
 * printable: it ends up in logs, headers and problem bodies), else a new random UUID.
 *
 * @param given - the incoming header value.
 */
export function requestIdOf(given: string | string[] | undefined): string {
  const v = Array.isArray(given) ? given[0] : given;
  return v !== undefined && isValidCorrelationId(v) ? v : randomUUID();
}
