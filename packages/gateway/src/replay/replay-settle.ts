import type { ResponseEnd, ResponseHeadView, Verdict } from 'sluice/http';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { CostConfig } from '../config/resolve-cost.js';
import { TIER_RULE_PREFIX } from '../limits/gateway-limits.js';
import type { LogRecord } from './log-record.js';

/** What a log line says of its response: the facts a settlement needs, copied for a request that waited. */
export type ResponseFacts = Pick<LogRecord, 'status' | 'bytes' | 'cost' | 'costLogged'>;

/** What a rule settles from the response, as the replay needs it. */
interface Settling {
  readonly cost: CostConfig | undefined;
  readonly counts: boolean;
}

/** Lines whose settlement a replay could not play as the gateway would have, by what the log lacked. */
export interface NotReplayed {
  /** Lines of a `count:` rule without a status (counted, as a response whose status is unknown is). */
  status: number;
  /** Lines of a `bytes` cost without a size field (charged their reservation). */
  size: number;
  /** Lines of a `header` or `json` cost without a cost field (charged the rule's fallback). */
  cost: number;
}

const encoder = new TextEncoder();
/** The end of a response the log says nothing of: its reservation stands, its status is unknown (it counts). */
const UNKNOWN: ResponseEnd = Object.freeze({ completed: false, status: 0, bytesSent: 0, bytesReceived: 0 });

/**
 * Plays the end of each replayed response to the observer of its verdict, from what the access log says of it:
 * the status (for `count:`), the size (`%b`, `$body_bytes_sent`: for `bytes` costs) and a JSON log's cost field
 * (`--field cost=...`: the units of a `header` cost, the tokens of a `json` cost). What the log does not say is
 * counted in {@link ReplaySettlement.missing}, for the report.
 */
export class ReplaySettlement {
  /** Whether the configuration settles anything; a replay without it feeds nothing. */
  readonly active: boolean;
  readonly missing: NotReplayed = { status: 0, size: 0, cost: 0 };
  readonly #rules = new Map<string, Settling>();
  readonly #headers: readonly string[];
  /** A JSON body carrying the cost at each configured path, built per line only when a rule reads JSON. */
  readonly #json: readonly { readonly path: readonly string[]; readonly weight: number }[];
  #record: ResponseFacts | undefined;
  readonly #head: ResponseHeadView;

  /** @param config - the replayed configuration. */
  constructor(config: GatewayConfig) {
    const add = (name: string, l: { cost?: CostConfig | undefined; count?: unknown }) => {
      if (l.cost !== undefined || l.count !== undefined)
        this.#rules.set(name, { cost: l.cost, counts: l.count !== undefined });
    };
    for (const t of Object.values(config.tiers)) add(`${TIER_RULE_PREFIX}${t.name}`, t);
    for (const e of config.endpoints) add(e.name, e);
    this.active = this.#rules.size > 0;
    const headers = new Set<string>();
    const json: { path: readonly string[]; weight: number }[] = [];
    for (const s of this.#rules.values()) {
      if (s.cost?.header !== undefined) headers.add(s.cost.header.toLowerCase());
      const j = s.cost?.json;
      if (j === undefined) continue;
      // The whole cost at the first path, divided by its weight, so that the weighted sum gives it back.
      const [path, weight] = typeof j === 'string' ? [j, 1] : (Object.entries(j)[0] ?? ['', 1]);
      if (path !== '' && weight > 0) json.push({ path: path.split('.'), weight });
    }
    this.#headers = [...headers];
    this.#json = json;
    const self = this;
    this.#head = {
      get status() {
        return self.#status();
      },
      get(name: string): string | undefined {
        const r = self.#record;
        if (name === 'content-type') return self.#json.length > 0 ? 'application/json' : undefined;
        if (r === undefined || !r.costLogged || !self.#headers.includes(name)) return undefined;
        return String(r.cost);
      },
      remove(): void {},
    };
  }

  /**
   * The cost a line is admitted at: 1 when the configuration settles costs (the log's cost field is then what the
   * response turned out to cost, settled at its end), else the line's cost as before.
   */
  admissionCost(r: LogRecord): number {
    return this.active ? 1 : r.cost;
  }

  /**
   * Plays the head and body of one replayed line's response to its verdict's observer (a cost header, a JSON
   * usage), and returns how the response ended, for the caller to end the observer with now or, for a request
   * holding a concurrency slot, at the end of its duration.
   */
  play(v: Verdict, r: ResponseFacts): ResponseEnd {
    const o = v.observer;
    if (o === undefined) return UNKNOWN;
    let bytes = false;
    let reads = false;
    let counts = false;
    for (const name of v.rules ?? []) {
      const s = this.#rules.get(name);
      if (s === undefined) continue;
      if (s.cost?.bytes !== undefined) bytes = true;
      if (s.cost?.header !== undefined || s.cost?.json !== undefined) reads = true;
      if (s.counts) counts = true;
    }
    if (counts && r.status === 0) this.missing.status++;
    if (reads && !r.costLogged) this.missing.cost++;
    if (bytes && r.bytes < 0) {
      // No size: nothing known of the response, so the reservation stands (as for the decision API).
      this.missing.size++;
      return UNKNOWN;
    }
    this.#record = r;
    try {
      o.head?.(this.#head);
      if (o.wantsBody === true && r.costLogged && this.#json.length > 0) o.body?.(this.#body(r.cost));
      return { completed: true, status: this.#status(), bytesSent: Math.max(0, r.bytes), bytesReceived: 0 };
    } finally {
      this.#record = undefined;
    }
  }

  /** The facts of a line, copied: a request that waits in a queue ends after its record was reused. */
  static facts(r: LogRecord): ResponseFacts {
    return { status: r.status, bytes: r.bytes, cost: r.cost, costLogged: r.costLogged };
  }

  /** The line's status, or 0 when the log has none (a `count:` rule then counts it: see `missing.status`). */
  #status(): number {
    return this.#record?.status ?? 0;
  }

  #body(cost: number): Uint8Array {
    const root: Record<string, unknown> = {};
    for (const { path, weight } of this.#json) {
      let o = root;
      for (let i = 0; i < path.length - 1; i++) {
        if (o[path[i]] === undefined) o[path[i]] = {};
        o = o[path[i]] as Record<string, unknown>;
      }
      o[path[path.length - 1]] = cost / weight;
    }
    return encoder.encode(JSON.stringify(root));
  }
}

/** What a replay did with a configuration's costs settled from the response (`cost:`, `count:`). */
export interface CostsReport {
  /** False when some lines lacked what their settlement needed (see `notReplayed`). */
  readonly replayed: boolean;
  readonly notReplayed: NotReplayed;
}

/** The `costs` entry of a configuration's report: nothing when the configuration settles nothing. */
export function costsReport(s: ReplaySettlement | undefined): { costs?: CostsReport } {
  if (s === undefined || !s.active) return {};
  const m = s.missing;
  return { costs: { replayed: m.status + m.size + m.cost === 0, notReplayed: { ...m } } };
}
