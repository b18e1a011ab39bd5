import { type Document, parseDocument, stringify } from 'yaml';
import type { ProposedLimit } from './proposed-limit.js';
import type { NamedConfig } from './replay-run.js';

/** The proposed configuration: the given file with the new numbers (comments kept), or a new file. */
export function renderProposal(
  proposals: readonly ProposedLimit[],
  base: NamedConfig & { text: string },
  withConfig: boolean,
): string {
  if (withConfig) {
    const doc: Document = parseDocument(base.text);
    for (const p of proposals) {
      if (p.kind === 'tier') {
        const path = ['rateLimiting', 'tiers', p.name];
        doc.setIn([...path, 'requestsPerMinute'], p.perMinute);
        doc.setIn([...path, 'burstLimit'], p.burst);
        // A kept hourly limit is left as written unless it had to be raised; none is added from a short log.
        if (p.perHour > 0 && p.perHour !== base.config.tiers[p.name].perHour)
          doc.setIn([...path, 'requestsPerHour'], p.perHour);
      } else if (p.kept === undefined && p.index !== undefined) {
        const path = ['rateLimiting', 'endpoints', p.index];
        doc.setIn([...path, 'limit'], p.perMinute);
        doc.setIn([...path, 'window'], `${p.windowSeconds}s`);
        if (doc.hasIn([...path, 'burst']) || p.burst !== p.perMinute) doc.setIn([...path, 'burst'], p.burst);
      }
    }
    return doc.toString();
  }
  const tiers: Record<string, unknown> = {};
  for (const p of proposals)
    if (p.kind === 'tier')
      tiers[p.name] = {
        requestsPerMinute: p.perMinute,
        ...(p.perHour > 0 ? { requestsPerHour: p.perHour } : {}),
        burstLimit: p.burst,
      };
  const defaultTier = tiers.standard !== undefined ? 'standard' : (Object.keys(tiers)[0] ?? 'standard');
  if (Object.keys(tiers).length === 0) tiers.standard = { requestsPerMinute: 60 };
  const endpoints = proposals
    .filter((p) => p.kind === 'rule')
    .map((p) => ({
      pattern: p.name,
      limit: p.perMinute,
      window: `${p.windowSeconds}s`,
      ...(p.burst === p.perMinute ? {} : { burst: p.burst }),
    }));
  return stringify({
    rateLimiting: { enabled: true, defaultTier, tiers, ...(endpoints.length === 0 ? {} : { endpoints }) },
  });
}
