import type { Check, RateLimitStore } from '../core/index.js';
import type { CostSettlement } from './cost-settlement.js';
import type { CountFilter } from './count-filter.js';
import type { ResponseEnd, ResponseHeadView, ResponseObserver } from './response-observer.js';
import { EventStreamScanner, JsonNumberScanner } from './usage-scanner.js';

/** Where settled costs are reported: the metrics of units charged and of answers that fell back. */
export interface SettleEvents {
  /** `units` charged to `policy` by a request (after settlement), in the rule's unit (`tokens`, `bytes`). */
  recordUnits?(policy: string, unit: string, units: number): void;
  /**
   * A response whose cost could not be read (`reason`: `header_missing`, `header_invalid`, `json_missing`,
   * `json_invalid` for a usage below zero), so the configured fallback was charged.
   */
  recordSettleFallback?(rule: string, reason: string): void;
}

/** What one group of a request's checks settles: the checks one rule keys, and what admission took from them. */
export interface SettleGroup {
  /** The rule that keys these checks, for the fallback's report. */
  readonly rule: string;
  readonly checks: readonly Check[];
  /** Whole tokens admission took from these checks (the plan's cost plus this group's reservation). */
  readonly admitted: number;
  readonly settlement: CostSettlement | undefined;
  readonly count: CountFilter | undefined;
}

/**
 * What an admitted request whose rules settle a cost or count only some responses holds until its response ends.
 * Reads the cost from the head (a header), the body as it streams (JSON, server-sent events: nothing kept but the
 * numbers wanted) or the end (bytes), then settles each group's difference with the store: a refund, or a charge
 * that may leave the bucket in debt. A client that goes away is charged the bytes sent, or the reservation for a
 * cost it never saw.
 */
export class SettleObserver implements ResponseObserver {
  readonly wantsBody: boolean;
  readonly #store: RateLimitStore;
  readonly #groups: readonly SettleGroup[];
  readonly #events: SettleEvents | undefined;
  readonly #onError: ((error: unknown) => void) | undefined;
  /** The JSON group's settlement (one per request: the first that reads the body). */
  readonly #json: CostSettlement | undefined;
  #scanner: JsonNumberScanner | EventStreamScanner | undefined;
  #scanned = 0;
  #headSeen = false;
  /** Per group, the units its header named (-1: missing, -2: not an integer of 0 or more). */
  #headerUnits: number[] | undefined;
  #ended = false;

  /**
   * @param store - the store that admitted the request.
   * @param groups - the request's groups of checks that settle or count.
   * @param events - where units and fallbacks are reported.
   * @param onError - told when the store fails to settle (the request has already run: nothing else to do).
   */
  constructor(
    store: RateLimitStore,
    groups: readonly SettleGroup[],
    events: SettleEvents | undefined,
    onError: ((error: unknown) => void) | undefined,
  ) {
    this.#store = store;
    this.#groups = groups;
    this.#events = events;
    this.#onError = onError;
    let json: CostSettlement | undefined;
    for (const g of groups) if (json === undefined && g.settlement?.source === 'json') json = g.settlement;
    this.#json = json;
    this.wantsBody = json !== undefined;
  }

  head(head: ResponseHeadView): void {
    this.#headSeen = true;
    const groups = this.#groups;
    for (let i = 0; i < groups.length; i++) {
      const s = groups[i].settlement;
      if (s?.source !== 'header') continue;
      const raw = head.get(s.header as string);
      this.#headerUnits ??= new Array<number>(groups.length).fill(-1);
      this.#headerUnits[i] = raw === undefined ? -1 : headerUnits(raw);
      if (!s.keepHeader && raw !== undefined) head.remove(s.header as string);
    }
    const json = this.#json;
    if (json !== undefined) {
      const type = head.get('content-type') ?? '';
      // The scanner is the only thing made per request, and only for a response that may carry the usage.
      this.#scanner = type.includes('text/event-stream')
        ? new EventStreamScanner(json.paths)
        : new JsonNumberScanner(json.paths);
    }
  }

  body(chunk: Uint8Array): void {
    const scanner = this.#scanner;
    if (scanner === undefined || this.#json === undefined) return;
    const room = this.#json.maxScanBytes - this.#scanned;
    if (room <= 0) return;
    this.#scanned += chunk.length;
    scanner.feed(room >= chunk.length ? chunk : chunk.subarray(0, room));
  }

  end(end: ResponseEnd): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#scanner?.end();
    const groups = this.#groups;
    for (let i = 0; i < groups.length; i++) {
      const g = groups[i];
      let units = g.settlement === undefined ? g.admitted : this.#units(g, i, end);
      if (g.count !== undefined && !g.count.counts(end.status)) units = 0;
      this.#report(g, units);
      const delta = units - g.admitted;
      if (delta !== 0) this.#settle(g.checks, delta);
    }
  }

  /** The units a group's settlement reads from the response. */
  #units(g: SettleGroup, i: number, end: ResponseEnd): number {
    const s = g.settlement as CostSettlement;
    if (s.source === 'bytes') {
      // Nothing known of the exchange (a decision API, which never sees the response): the reservation stands.
      if (!this.#headSeen && end.status === 0 && end.bytesSent === 0 && end.bytesReceived === 0)
        return g.admitted;
      if (s.bytes === 'response') return end.bytesSent;
      if (s.bytes === 'request') return end.bytesReceived;
      return end.bytesSent + end.bytesReceived;
    }
    // Nothing of the answer was seen (an upstream that failed, a client gone before the head): the reservation.
    if (!this.#headSeen) return g.admitted;
    if (s.source === 'header') {
      const u = this.#headerUnits?.[i] ?? -1;
      if (u >= 0) return u;
      return this.#fallback(g, u === -1 ? 'header_missing' : 'header_invalid');
    }
    const scanner = this.#scanner;
    if (scanner !== undefined && scanner.found !== 0) {
      let sum = 0;
      for (let p = 0; p < s.paths.length; p++) {
        if ((scanner.found & (1 << p)) === 0) continue;
        // A usage below zero is no count of anything: the upstream's answer is as unusable as a header that is
        // not a number, and costs the fallback, never a refund of the whole reservation.
        if (scanner.values[p] < 0) return this.#fallback(g, 'json_invalid');
        sum += scanner.values[p] * s.weights[p];
      }
      return Math.min(Math.ceil(sum), Number.MAX_SAFE_INTEGER);
    }
    // A stream cut short never got to its usage: the reservation stands, nothing is made up.
    if (!end.completed) return g.admitted;
    return this.#fallback(g, 'json_missing');
  }

  #fallback(g: SettleGroup, reason: string): number {
    this.#events?.recordSettleFallback?.(g.rule, reason);
    return g.settlement?.fallback ?? g.admitted;
  }

  #report(g: SettleGroup, units: number): void {
    const record = this.#events?.recordUnits;
    if (record === undefined) return;
    const unit = g.settlement?.unit ?? 'requests';
    for (const c of g.checks) record.call(this.#events, c.policy.name, unit, units);
  }

  #settle(checks: readonly Check[], delta: number): void {
    const store = this.#store;
    try {
      const r =
        store.settle !== undefined
          ? store.settle(checks, delta)
          : delta < 0
            ? store.refund(checks, -delta)
            : undefined;
      if (r !== undefined && typeof (r as Promise<void>).then === 'function') {
        (r as Promise<void>).then(undefined, (e: unknown) => this.#onError?.(e));
      }
    } catch (e) {
      this.#onError?.(e);
    }
  }
}

/**
 * An integer of 0 or more, written as digits only (`12`); -2 for anything else. A number of any length is a cost,
 * however large: beyond 2^53 - 1 it is clamped there, as a JSON usage is, and the settlement's debt bound (one burst)
 * does the rest. Refusing long ones would charge the fallback, the least, for the largest costs.
 */
function headerUnits(raw: string): number {
  const v = raw.trim();
  if (v.length === 0) return -2;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return -2;
  }
  // 16 digits and more may be above 2^53 (Infinity past 309): clamped, never read inexactly below the true cost.
  return v.length < 16 ? Number(v) : Math.min(Number(v), Number.MAX_SAFE_INTEGER);
}
