import type { GatewayConfig } from '../config/gateway-config.js';
import { loadConfigText } from '../config/load-config.js';
import type { FieldMap } from './json-fields.js';
import type { LogFormat } from './log-format.js';
import type { ProposedLimit } from './proposed-limit.js';
import { replayReport } from './replay-report.js';
import { type ReplayLog, runReplay } from './replay-run.js';

/** The environment for `${NAME}` references of a proposed file. */
type Env = Readonly<Record<string, string | undefined>> | undefined;

/** What a confirming replay reads, and how a proposed file is loaded. */
export interface ProposalReplay {
  readonly logs: readonly ReplayLog[];
  readonly format?: LogFormat;
  readonly fields?: FieldMap;
  readonly reorderWindowMs?: number;
  /** The environment the given configuration was loaded with. */
  readonly env: Env;
  /** The file name violations of the proposed file are reported under. */
  readonly file: string;
}

/**
 * Loads a proposed file. It keeps the `${NAME}` references of the given file, so it is loaded with the
 * environment that file was: with none, a reference would fail (or silently take its `:-default`).
 */
export function loadProposal(text: string, env: Env, file = 'recommended.yaml'): GatewayConfig {
  const r = loadConfigText(text, file, env === undefined ? {} : { env });
  if (!r.ok)
    throw new Error(
      `the proposed configuration is invalid: ${r.violations.map((v) => `${v.path}: ${v.message}`).join('; ')}`,
    );
  return r.config;
}

const RAISE = 1.25;

/** The replay of the logs under a proposed file. */
export interface Confirmation {
  readonly requests: number;
  readonly limited: number;
  /** The share of requests limited. */
  readonly requestShare: number;
  readonly limitedClients: number;
  /** The share of clients limited at least once. */
  readonly share: number;
  /** Policy name to the requests it refused. */
  readonly limitedPolicies: ReadonlyMap<string, number>;
}

/**
 * Replays the logs under a proposed file.
 *
 * @param o - the logs and how to read them, and how to load the file.
 * @param clients - the clients of the measuring replay, whose share the limited ones are.
 */
export async function confirmProposal(
  yaml: string,
  o: ProposalReplay,
  clients: number,
): Promise<Confirmation> {
  const config = loadProposal(yaml, o.env, o.file);
  const r = replayReport(
    await runReplay({
      config: { name: 'proposed', config },
      logs: o.logs,
      format: o.format,
      fields: o.fields,
      ...(o.reorderWindowMs === undefined ? {} : { reorderWindowMs: o.reorderWindowMs }),
    }),
  );
  const limitedPolicies = new Map<string, number>();
  for (const p of r.policies) if (p.limitedHere > 0) limitedPolicies.set(p.policy, p.limitedHere);
  return {
    requests: r.totals.requests,
    limited: r.totals.limited,
    requestShare: r.totals.requests === 0 ? 0 : r.totals.limited / r.totals.requests,
    limitedClients: r.limitedKeyCount,
    share: clients === 0 ? 0 : r.limitedKeyCount / clients,
    limitedPolicies,
  };
}

/** Raises the limits of the proposals whose policies limited (a tier's minute and hour policies, a rule's). */
export function raiseLimits(proposals: ProposedLimit[], limited: ReadonlyMap<string, number>): void {
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
