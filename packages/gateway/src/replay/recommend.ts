import { detached, type Verdict } from 'sluice/http';
import { TIER_RULE_PREFIX } from '../limits/gateway-limits.js';
import { confirmProposal, loadProposal, type ProposalReplay, raiseLimits } from './confirm-proposal.js';
import type { FieldMap } from './json-fields.js';
import type { LogFormat } from './log-format.js';
import type { LogRecord } from './log-record.js';
import { pathTemplate } from './path-template.js';
import { proposeLimits } from './propose-limits.js';
import type { ProposedLimit } from './proposed-limit.js';
import { type GroupDistribution, RateDistribution } from './rate-distribution.js';
import { renderProposal } from './render-proposal.js';
import { type LogStats, type NamedConfig, type ReplayLog, runReplay } from './replay-run.js';
import { shortLogWarnings } from './short-log-warnings.js';
import { isStaticPath } from './static-files.js';

export type { ProposedLimit } from './proposed-limit.js';

/** Options of {@link recommend}. */
export interface RecommendOptions {
  readonly logs: readonly ReplayLog[];
  /** The configuration whose tiers and endpoint rules get proposed limits, and its text (kept, comments too). */
  readonly config?: NamedConfig & { readonly text: string };
  /** The largest share of clients the proposed limits may limit (0 to 0.5). */
  readonly spare: number;
  /** Without a configuration: how many of the most requested path templates become endpoint rules. */
  readonly top: number;
  readonly format?: LogFormat;
  readonly fields?: FieldMap;
  /** How late a line may be and still be measured in time order (`runReplay`'s option). */
  readonly reorderWindowMs?: number;
  /** Rounds of raising limits that limited too many clients. */
  readonly maxRounds?: number;
  /**
   * The environment for `${NAME}` references of the proposed file, which keeps them as written: the one the
   * configuration was loaded with. Default `process.env`.
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** What `sluice recommend` found and proposes. */
export interface Recommendation {
  readonly spare: number;
  /** Distinct clients (an estimate when `clientsEstimated`: more clients than the tables hold). */
  readonly clients: number;
  readonly clientsEstimated: boolean;
  /** Clients that sent one request: counted, left out of the peaks (no limit refuses a first request). */
  readonly clientsOneRequest: number;
  readonly requests: number;
  /**
   * Without a configuration: requests for static files (`.css`, `.js`, images, fonts, by extension), and their
   * distinct paths, for which no endpoint rule is proposed (a page loads them in a burst).
   */
  readonly staticFiles: { readonly requests: number; readonly paths: number };
  /** What reading the logs found (the measuring replay): formats, unknown lines, a reading that stopped early. */
  readonly logs: readonly LogStats[];
  /** Requests without a client address or caller identity, all measured as one client (`ip:unknown`). */
  readonly clientsMissing: number;
  readonly groups: readonly (Omit<GroupDistribution, 'sortedPeaks' | 'sortedRequests'> & {
    readonly kind: 'tier' | 'rule';
  })[];
  readonly proposals: readonly ProposedLimit[];
  /**
   * The time the logs' requests cover: the first and last request times, and the seconds between them plus one
   * (the resolution of common log times, so that a log of 09:00:00 to 09:59:59 spans an hour). Absent without a
   * request.
   */
  readonly span?: { readonly first: string; readonly last: string; readonly seconds: number };
  /**
   * What the proposal could not measure, one sentence each: a log shorter than an hour gives no `requestsPerHour`,
   * one shorter than a window gives limits extrapolated from each client's pace. Empty for logs of an hour or more.
   */
  readonly warnings: readonly string[];
  /** The proposed configuration file. */
  readonly yaml: string;
  /**
   * The replay of the logs under it: the share of requests limited (`requestShare`) and of clients limited at
   * least once (`share`); `withinSpare` when both are at most `spare`.
   */
  readonly confirmation: {
    readonly requests: number;
    readonly limited: number;
    readonly requestShare: number;
    readonly clients: number;
    readonly limitedClients: number;
    readonly share: number;
    readonly rounds: number;
    readonly withinSpare: boolean;
  };
}

/** Limits that never bind: the observing replay of a log without a configuration. */
const OBSERVER_YAML = `rateLimiting:
  enabled: true
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 1000000000 }
`;

const MAX_TEMPLATES = 10_000;
/**
 * The most (group, client) pairs whose peaks are measured: 440 bytes each, about 115 MB. Clients past it are
 * counted (estimated) but not measured; the ones measured are the first to send two requests, a sample of them all.
 */
const PAIR_CAP = 1 << 18;

/**
 * Proposes limits from access logs: replays them under the configuration (or, without one, under limits that never
 * bind) to learn each request's caller and the rules it matched, measures per-client peaks over sliding 1 s, 1 min
 * and 1 h windows per tier and per endpoint pattern (static files get no rule), and proposes for each the
 * per-minute (and per-hour) rate that at most `spare` of its clients with more than one request exceeded, never
 * below its p99 client, and that the clients exceeding it sent at most `spare` of its requests: clients with one
 * request cannot pull a limit down, however many they are. Each burst is one minute's limit (a token bucket of that
 * capacity admits every client whose busiest minute stays within the limit). The proposed file is then replayed;
 * while it limits more than `spare` of all clients or of all requests, the limits of the policies that limited are
 * raised by a quarter and it is replayed again.
 *
 * @returns the distributions, the proposal as a configuration file and its confirmation.
 */
export async function recommend(o: RecommendOptions): Promise<Recommendation> {
  const base = o.config ?? {
    name: 'observer',
    config: loadProposal(OBSERVER_YAML, o.env),
    text: OBSERVER_YAML,
  };
  const withConfig = o.config !== undefined;
  let dist = new RateDistribution(PAIR_CAP);
  let staticRequests = 0;
  let staticPaths = new Set<string>();
  // Group names are built once per tier, rule and path template, so each request finds its groups by strings
  // whose hashes V8 already holds. A name is copied on entry: one cut from the log's text would otherwise keep that
  // text alive (docs/DECISIONS.md, D-G32). Each map stops growing at MAX_TEMPLATES.
  const ruleGroups = new Map<string, string>();
  const tierGroups = new Map<string, string>();
  const templates = new Map<string, string>();
  const named = (m: Map<string, string>, name: string, build: (own: string) => string) => {
    let g = m.get(name);
    if (g === undefined && m.size < MAX_TEMPLATES) {
      const own = detached(name);
      g = build(own);
      m.set(own, g);
    }
    return g;
  };
  const tierGroup = (own: string) => `tier:${own}`;
  const templateGroup = (own: string) => `rule:${own}`;
  const seen = (v: Verdict, timeMs: number, cost: number, tier: string, template: string) => {
    if (v.action === 'exempt' || v.decision === undefined) return;
    const key = v.key ?? 'ip:unknown';
    if (withConfig) {
      const rules = v.rules ?? [];
      for (let i = 0; i < rules.length; i++) {
        const name = rules[i];
        dist.add(named(ruleGroups, name, groupName) ?? groupName(name), key, timeMs, cost);
      }
      return;
    }
    dist.add(named(tierGroups, tier, tierGroup) ?? tierGroup(tier), key, timeMs, cost);
    if (isStaticPath(template)) {
      staticRequests++;
      if (staticPaths.size < MAX_TEMPLATES) staticPaths.add(template);
      return;
    }
    // A log of unfoldable paths (slugs, hashes) stops adding new templates at the cap.
    const group = named(templates, template, templateGroup);
    if (group !== undefined) dist.add(group, key, timeMs, cost);
  };
  // The logs' span: a window longer than it is not measured (a client's count over ten minutes is no hour's).
  let firstMs = Number.POSITIVE_INFINITY;
  let lastMs = Number.NEGATIVE_INFINITY;
  const onDecision = (rec: LogRecord, d: Verdict | Promise<Verdict>) => {
    const timeMs = rec.timeMs;
    if (timeMs < firstMs) firstMs = timeMs;
    if (timeMs > lastMs) lastMs = timeMs;
    const cost = rec.cost;
    const tier = rec.tier ?? base.config.defaultTier;
    const template = withConfig ? '' : pathTemplate(rec.target);
    if (d instanceof Promise) void d.then((x) => seen(x, timeMs, cost, tier, template));
    else seen(d, timeMs, cost, tier, template);
  };
  // A replay that starts over (a line later than its first, short window) measures from the start again.
  const restart = () => {
    dist = new RateDistribution(PAIR_CAP);
    staticRequests = 0;
    staticPaths = new Set<string>();
    firstMs = Number.POSITIVE_INFINITY;
    lastMs = Number.NEGATIVE_INFINITY;
  };
  const run = await runReplay({
    config: base,
    onRestart: restart,
    logs: o.logs,
    format: o.format,
    fields: o.fields,
    ...(o.reorderWindowMs === undefined ? {} : { reorderWindowMs: o.reorderWindowMs }),
    onDecision,
  });
  const groups = dist.groups();
  const level = Math.max(1 - o.spare, 0.99);
  const spanMs = lastMs >= firstMs ? lastMs - firstMs + 1000 : 0;
  const proposals = proposeLimits(groups, base.config, withConfig, o.top, level, spanMs, o.spare);
  const counted = dist.clients('tier:');
  const clients = counted.count;
  let yaml = renderProposal(proposals, base, withConfig);
  const replay: ProposalReplay = {
    logs: o.logs,
    format: o.format,
    fields: o.fields,
    ...(o.reorderWindowMs === undefined ? {} : { reorderWindowMs: o.reorderWindowMs }),
    env: o.env,
    file: o.config?.config.file ?? 'recommended.yaml',
  };
  let rounds = 1;
  let confirmation = await confirmProposal(yaml, replay, clients);
  const maxRounds = o.maxRounds ?? 12;
  const within = () => confirmation.share <= o.spare && confirmation.requestShare <= o.spare;
  while (!within() && rounds < maxRounds) {
    rounds++;
    raiseLimits(proposals, confirmation.limitedPolicies);
    yaml = renderProposal(proposals, base, withConfig);
    confirmation = await confirmProposal(yaml, replay, clients);
  }
  const shown = groups.filter((g) => proposals.some((p) => groupOf(p) === g.group));
  return {
    spare: o.spare,
    clients,
    clientsEstimated: counted.estimated,
    clientsOneRequest: groups
      .filter((g) => g.group.startsWith('tier:'))
      .reduce((n, g) => n + g.oneRequest, 0),
    requests: run.engine.tally.totals.requests,
    staticFiles: { requests: staticRequests, paths: staticPaths.size },
    logs: run.logs,
    clientsMissing: run.engine.clientsMissing,
    groups: shown.map(({ sortedPeaks: _, sortedRequests: __, ...g }) => ({
      ...g,
      kind: g.group.startsWith('tier:') ? 'tier' : 'rule',
    })),
    proposals,
    ...(spanMs === 0
      ? {}
      : {
          span: {
            first: new Date(firstMs).toISOString(),
            last: new Date(lastMs).toISOString(),
            seconds: spanMs / 1000,
          },
        }),
    warnings:
      spanMs === 0
        ? []
        : shortLogWarnings(proposals, withConfig, spanMs, new Date(firstMs), new Date(lastMs)),
    yaml,
    confirmation: {
      requests: confirmation.requests,
      limited: confirmation.limited,
      requestShare: confirmation.requestShare,
      clients,
      limitedClients: confirmation.limitedClients,
      share: confirmation.share,
      rounds,
      withinSpare: within(),
    },
  };
}

function groupName(rule: string): string {
  return rule.startsWith(TIER_RULE_PREFIX) ? `tier:${rule.slice(TIER_RULE_PREFIX.length)}` : `rule:${rule}`;
}

function groupOf(p: ProposedLimit): string {
  return p.kind === 'tier' ? `tier:${p.name}` : `rule:${p.policy}`;
}
