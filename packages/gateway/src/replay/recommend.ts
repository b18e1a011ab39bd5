import { detached, type Verdict } from 'sluice/http';
import { type Document, parseDocument, stringify } from 'yaml';
import type { GatewayConfig } from '../config/gateway-config.js';
import { loadConfigText } from '../config/load-config.js';
import { TIER_RULE_PREFIX } from '../limits/gateway-limits.js';
import type { FieldMap } from './json-fields.js';
import type { LogFormat } from './log-format.js';
import type { LogRecord } from './log-record.js';
import { pathTemplate } from './path-template.js';
import { type GroupDistribution, quantile, RATE_WINDOWS_MS, RateDistribution } from './rate-distribution.js';
import { replayReport } from './replay-report.js';
import { type LogStats, type NamedConfig, type ReplayLog, runReplay } from './replay-run.js';

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
  /** Rounds of raising limits that limited too many clients. */
  readonly maxRounds?: number;
  /**
   * The environment for `${NAME}` references of the proposed file, which keeps them as written: the one the
   * configuration was loaded with. Default `process.env`.
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** One proposed limit. */
export interface ProposedLimit {
  readonly kind: 'tier' | 'rule';
  /** The tier's name, or the rule's pattern. */
  readonly name: string;
  /** The policy's name in headers and metrics (a tier's minute policy, or the rule's `name`, default its pattern). */
  readonly policy: string;
  /**
   * For a tier: requests per minute, burst, requests per hour (0 for none: the logs span less than an hour and the
   * file has none); for a rule: limit per window and burst.
   */
  perMinute: number;
  burst: number;
  perHour: number;
  /**
   * A tier's `requestsPerHour` is the file's own, not measured: the logs span less than an hour (raised only when
   * it limited in them).
   */
  readonly hourKept?: true;
  /**
   * The logs span less than the limit's window (a tier's minute, a rule's window): the limit is each client's
   * pace over the span carried over the whole window, not a measured peak.
   */
  readonly extrapolated?: true;
  /** A rule's window in seconds (60 unless the configuration's rule has another). */
  readonly windowSeconds: number;
  /** The rule's position in `rateLimiting.endpoints` (configuration mode), for writing it back. */
  readonly index?: number;
  /** Rules whose limits come from a class or a stepped refill are reported, not changed. */
  readonly kept?: string;
}

/** What `sluice recommend` found and proposes. */
export interface Recommendation {
  readonly spare: number;
  readonly clients: number;
  readonly requests: number;
  /** What reading the logs found (the measuring replay): formats, unknown lines, a reading that stopped early. */
  readonly logs: readonly LogStats[];
  /** Requests without a client address or caller identity, all measured as one client (`ip:unknown`). */
  readonly clientsMissing: number;
  readonly groups: readonly (Omit<GroupDistribution, 'sortedPeaks'> & { readonly kind: 'tier' | 'rule' })[];
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
  /** The replay of the logs under it. */
  readonly confirmation: {
    readonly requests: number;
    readonly limited: number;
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

const RAISE = 1.25;
const MAX_TEMPLATES = 10_000;

/**
 * Proposes limits from access logs: replays them under the configuration (or, without one, under limits that never
 * bind) to learn each request's caller and the rules it matched, measures per-client peaks over 1 s, 1 min and 1 h
 * per tier and per endpoint pattern, proposes for each the per-minute (and per-hour) rate that at most `spare` of
 * its clients exceeded and never below its p99 client, with a burst of one minute's limit (a token bucket of that
 * capacity admits every client whose busiest minute stays within the limit). The proposed file is then replayed;
 * while it limits more than `spare` of all clients, the limits of the policies that limited are raised by a quarter
 * and it is replayed again.
 *
 * @returns the distributions, the proposal as a configuration file and its confirmation.
 */
export async function recommend(o: RecommendOptions): Promise<Recommendation> {
  const base = o.config ?? { name: 'observer', config: loaded(OBSERVER_YAML, o.env), text: OBSERVER_YAML };
  const withConfig = o.config !== undefined;
  // Two (group, client) pairs per tracked key: a tier and an endpoint on average; beyond, pairs are not tracked.
  const dist = new RateDistribution(Math.max(base.config.maxTrackedKeys, 100_000) * 2);
  const clients = new Set<string>();
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
    if (clients.size < base.config.maxTrackedKeys) clients.add(key);
    if (withConfig) {
      const rules = v.rules ?? [];
      for (let i = 0; i < rules.length; i++) {
        const name = rules[i];
        dist.add(named(ruleGroups, name, groupName) ?? groupName(name), key, timeMs, cost);
      }
      return;
    }
    dist.add(named(tierGroups, tier, tierGroup) ?? tierGroup(tier), key, timeMs, cost);
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
  const run = await runReplay({ config: base, logs: o.logs, format: o.format, fields: o.fields, onDecision });
  const groups = dist.groups();
  const level = Math.max(1 - o.spare, 0.99);
  const spanMs = lastMs >= firstMs ? lastMs - firstMs + 1000 : 0;
  const proposals = propose(groups, base.config, withConfig, o.top, level, spanMs);
  let yaml = render(proposals, base, withConfig);
  let rounds = 1;
  let confirmation = await confirm(yaml, o, clients.size);
  const maxRounds = o.maxRounds ?? 12;
  while (confirmation.share > o.spare && rounds < maxRounds) {
    rounds++;
    raise(proposals, confirmation.limitedPolicies);
    yaml = render(proposals, base, withConfig);
    confirmation = await confirm(yaml, o, clients.size);
  }
  return {
    spare: o.spare,
    clients: clients.size,
    requests: run.engine.tally.totals.requests,
    logs: run.logs,
    clientsMissing: run.engine.clientsMissing,
    groups: groups
      .filter((g) => proposals.some((p) => groupOf(p) === g.group))
      .map(({ sortedPeaks: _, ...g }) => ({ ...g, kind: g.group.startsWith('tier:') ? 'tier' : 'rule' })),
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
      clients: clients.size,
      limitedClients: confirmation.limitedClients,
      share: confirmation.share,
      rounds,
      withinSpare: confirmation.share <= o.spare,
    },
  };
}

function groupName(rule: string): string {
  return rule.startsWith(TIER_RULE_PREFIX) ? `tier:${rule.slice(TIER_RULE_PREFIX.length)}` : `rule:${rule}`;
}

function groupOf(p: ProposedLimit): string {
  return p.kind === 'tier' ? `tier:${p.name}` : `rule:${p.policy}`;
}

/**
 * Loads a proposed file. It keeps the `${NAME}` references of the given file, so it is loaded with the
 * environment that file was: with none, a reference would fail (or silently take its `:-default`).
 */
function loaded(text: string, env: RecommendOptions['env'], file = 'recommended.yaml'): GatewayConfig {
  const r = loadConfigText(text, file, env === undefined ? {} : { env });
  if (!r.ok)
    throw new Error(
      `the proposed configuration is invalid: ${r.violations.map((v) => `${v.path}: ${v.message}`).join('; ')}`,
    );
  return r.config;
}

/** The value at `level` of a group's per-client peaks over window `w`, at least 1. */
function at(g: GroupDistribution, w: 0 | 1 | 2, level: number): number {
  return Math.max(1, Math.ceil(quantile(g.sortedPeaks[w] as Float64Array, level)));
}

/**
 * @param spanMs - the time the logs cover: a window longer than it was never seen whole, so a peak over it is a
 *   count over the span. A limit that must be set (a tier's per minute, a rule's) is then that count at the
 *   same pace over the whole window; a tier's per hour, which may be left out, is not proposed.
 */
function propose(
  groups: readonly GroupDistribution[],
  config: GatewayConfig,
  withConfig: boolean,
  top: number,
  level: number,
  spanMs: number,
): ProposedLimit[] {
  const seenMs = Math.max(spanMs, RATE_WINDOWS_MS[0]);
  const hourSeen = spanMs >= RATE_WINDOWS_MS[2];
  const byName = new Map(groups.map((g) => [g.group, g]));
  const out: ProposedLimit[] = [];
  const tierNames = withConfig
    ? Object.keys(config.tiers).filter((t) => !config.tiers[t].unlimited)
    : groups.filter((g) => g.group.startsWith('tier:')).map((g) => g.group.slice(5));
  for (const name of tierNames) {
    const g = byName.get(`tier:${name}`);
    if (g === undefined) continue; // a tier nobody used keeps its limits
    const minuteMs = RATE_WINDOWS_MS[1];
    const short = seenMs < minuteMs;
    const perMinute = short ? Math.ceil((at(g, 1, level) * minuteMs) / seenMs) : at(g, 1, level);
    const kept = withConfig ? (config.tiers[name].perHour ?? 0) : 0;
    out.push({
      kind: 'tier',
      name,
      policy: name,
      perMinute,
      burst: Math.max(perMinute, at(g, 0, level)),
      perHour: hourSeen ? Math.max(perMinute, at(g, 2, level)) : kept,
      windowSeconds: 60,
      ...(!hourSeen && kept > 0 ? { hourKept: true as const } : {}),
      ...(short ? { extrapolated: true as const } : {}),
    });
  }
  const rules = withConfig
    ? config.endpoints.map((r) => ({
        name: r.name,
        pattern: r.pattern,
        window: r.windowSeconds,
        index: r.index,
        kept: keptBecause(r),
      }))
    : groups
        .filter((g) => g.group.startsWith('rule:'))
        .slice(0, top)
        .map((g) => ({
          name: g.group.slice(5),
          pattern: g.group.slice(5),
          window: 60,
          index: undefined,
          kept: undefined,
        }));
  for (const r of rules) {
    const g = byName.get(`rule:${r.name}`);
    if (g === undefined) continue;
    // The measured window closest to the rule's, scaled to it; a window longer than the logs was measured over
    // their span.
    const w = r.window <= 1 ? 0 : r.window <= 60 ? 1 : 2;
    const measuredMs = Math.min(RATE_WINDOWS_MS[w], seenMs);
    const limit = Math.max(1, Math.ceil((at(g, w, level) * r.window * 1000) / measuredMs));
    const extrapolated = r.kept === undefined && r.window * 1000 > seenMs;
    out.push({
      kind: 'rule',
      name: r.pattern,
      policy: r.name,
      perMinute: limit,
      burst: limit,
      perHour: 0,
      windowSeconds: r.window,
      ...(r.index === undefined ? {} : { index: r.index }),
      ...(r.kept === undefined ? {} : { kept: r.kept }),
      ...(extrapolated ? { extrapolated: true as const } : {}),
    });
  }
  return out;
}

/**
 * The warnings of logs shorter than a window: the tiers that get no `requestsPerHour` (or keep the file's), and
 * the limits extrapolated from the clients' pace over the span.
 */
function shortLogWarnings(
  proposals: readonly ProposedLimit[],
  withConfig: boolean,
  spanMs: number,
  first: Date,
  last: Date,
): string[] {
  const out: string[] = [];
  const span = duration(spanMs);
  const logs = `the logs span ${span} (${first.toISOString()} to ${last.toISOString()})`;
  const tiers = proposals.filter((p) => p.kind === 'tier');
  if (spanMs < RATE_WINDOWS_MS[2] && tiers.length > 0) {
    const kept = tiers.filter((p) => p.hourKept === true).map((p) => p.name);
    out.push(
      `${logs}, less than an hour: no requestsPerHour is proposed: the 1 h column counts at most ${span} of each client, and an hourly limit from it would limit the same traffic over a whole hour${
        withConfig
          ? kept.length > 0
            ? `; the requestsPerHour of ${kept.join(', ')} ${kept.length === 1 ? 'is' : 'are'} kept as the file has ${kept.length === 1 ? 'it' : 'them'} (raised only if ${kept.length === 1 ? 'it' : 'they'} limited in the logs)`
            : ''
          : ''
      }. Run sluice recommend on an hour of logs or more for one`,
    );
  }
  const extrapolated = proposals.filter((p) => p.extrapolated === true);
  const minute = extrapolated.filter((p) => p.windowSeconds === 60).map((p) => p.name);
  const longer = extrapolated.filter((p) => p.windowSeconds !== 60);
  const pace = `extrapolated from each client's pace over ${span} (its count times the window over the span), not measured`;
  if (minute.length > 0)
    out.push(
      `${logs}, less than a minute: the per-minute limits of ${minute.join(', ')} are ${pace}. Run sluice recommend on a longer log for measured ones`,
    );
  if (longer.length > 0)
    out.push(
      `${logs}, less than the window of ${longer.map((p) => `${p.name} (${duration(p.windowSeconds * 1000)})`).join(', ')}: ${longer.length === 1 ? 'its limit is' : 'their limits are'} ${pace}`,
    );
  return out;
}

/** A span for a sentence: seconds under a minute, minutes under an hour, then hours (to a tenth). */
function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Number((s / 60).toFixed(1))} min`;
  return `${Number((s / 3600).toFixed(1))} h`;
}

function keptBecause(r: GatewayConfig['endpoints'][number]): string | undefined {
  if (r.className !== undefined) return `its limits come from the class ${r.className}`;
  if (r.refill !== undefined) return 'it refills in steps';
  return undefined;
}

/** The proposed configuration: the given file with the new numbers (comments kept), or a new file. */
function render(
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

interface Confirmation {
  readonly requests: number;
  readonly limited: number;
  readonly limitedClients: number;
  readonly share: number;
  /** Policy name to the requests it refused. */
  readonly limitedPolicies: ReadonlyMap<string, number>;
}

async function confirm(yaml: string, o: RecommendOptions, clients: number): Promise<Confirmation> {
  const config = loaded(yaml, o.env, o.config?.config.file ?? 'recommended.yaml');
  const r = replayReport(
    await runReplay({
      config: { name: 'proposed', config },
      logs: o.logs,
      format: o.format,
      fields: o.fields,
    }),
  );
  const limitedPolicies = new Map<string, number>();
  for (const p of r.policies) if (p.limitedHere > 0) limitedPolicies.set(p.policy, p.limitedHere);
  return {
    requests: r.totals.requests,
    limited: r.totals.limited,
    limitedClients: r.limitedKeyCount,
    share: clients === 0 ? 0 : r.limitedKeyCount / clients,
    limitedPolicies,
  };
}

/** Raises the limits of the proposals whose policies limited (a tier's minute and hour policies, a rule's). */
function raise(proposals: ProposedLimit[], limited: ReadonlyMap<string, number>): void {
  const up = (v: number) => Math.max(v + 1, Math.ceil(v * RAISE));
  for (const p of proposals) {
    if (p.kept !== undefined) continue;
    if (p.kind === 'tier') {
      if (limited.has(p.name)) {
        p.perMinute = up(p.perMinute);
        p.burst = Math.max(p.perMinute, up(p.burst));
        // No hourly limit (from a log shorter than an hour) stays none.
        if (p.perHour > 0) p.perHour = Math.max(p.perHour, p.perMinute);
      }
      if (limited.has(`${p.name}.hour`)) p.perHour = up(p.perHour);
    } else if (limited.has(p.policy)) {
      p.perMinute = up(p.perMinute);
      p.burst = Math.max(p.perMinute, up(p.burst));
    }
  }
}
