import type { HeaderSource } from './types.js';

/**
 * Reads one request header from either shape of {@link HeaderSource}. Repeated fields (Node gives an array for
 * some names) are joined with `, `, which is how HTTP combines field lines (RFC 9110, 5.3).
 *
 * @param headers - the request headers.
 * @param name - the header name, lower case.
 * @returns the value, or `undefined` when the header is absent.
 */
export function readHeader(headers: HeaderSource, name: string): string | undefined {
  const get = (headers as { get?: unknown }).get;
  if (typeof get === 'function') {
    const v = (get as (n: string) => string | null | undefined).call(headers, name);
    return v ?? undefined;
  }
  const v = (headers as Record<string, string | readonly string[] | undefined>)[name];
  if (v === undefined || typeof v === 'string') return v;
  return Array.isArray(v) ? v.join(', ') : undefined;
}
