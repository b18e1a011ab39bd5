import type { SemanticIssue } from './semantic-issue.js';

/**
 * Connections one client address may hold open when `server.maxConnectionsPerClient` is not set: far more than a
 * browser (6 per host) or a pooled API client opens, enough for a small office behind one NAT address, and small
 * enough that one host alone cannot take the listener's whole cap (the default total is up to 10,000).
 */
export const DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 256;

/**
 * The rule between the two connection caps the schema cannot express: a client's cap above the total would never
 * apply, which is not what its author meant.
 *
 * @param total - `server.maxConnections` as written (schema-valid), or `undefined`.
 * @param perClient - `server.maxConnectionsPerClient` as written (schema-valid), or `undefined`.
 * @returns the issue found, if any.
 */
export function connectionCapIssues(
  total: number | undefined,
  perClient: number | undefined,
): SemanticIssue[] {
  if (total === undefined || total === 0 || perClient === undefined || perClient <= total) return [];
  return [
    {
      path: ['server', 'maxConnectionsPerClient'],
      message: `must be at most server.maxConnections (${total}), or 0 for no cap per client, got ${perClient}`,
    },
  ];
}
