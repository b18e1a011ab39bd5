import { parseTrustedProxies } from 'sluice/http';
import type { ConfigPath } from './violation.js';

const EXPECTED = 'must be a CIDR (10.0.0.0/8), an IP address, or one of loopback, linklocal, uniquelocal';

/**
 * Every entry of an address list (`server.trustedProxies`, `decision.allowedPeers`, `envoy.allowedPeers`) that is no CIDR, address or
 * range name, each with its own path: the parser stops at the first bad entry, so a list is read entry by entry
 * and an operator fixing the file sees all of them at once.
 *
 * @param path - the list's path in the configuration.
 * @param list - the list as written (the schema has checked that it is a list of strings when present).
 */
export function addressListIssues(
  path: ConfigPath,
  list: unknown,
): { readonly path: ConfigPath; readonly message: string }[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) return [{ path, message: EXPECTED }];
  const issues: { path: ConfigPath; message: string }[] = [];
  list.forEach((entry: unknown, i) => {
    try {
      parseTrustedProxies(path.join('.'), [entry]);
    } catch {
      issues.push({ path: [...path, i], message: EXPECTED });
    }
  });
  return issues;
}
