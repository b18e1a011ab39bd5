import type { IncomingHttpHeaders } from 'node:http';
import { ManualClock } from 'sluice';
import { detached, isPromiseLike, type Verdict } from 'sluice/http';
import { MemoryStore } from 'sluice/memory';
import type { GatewayRequest } from '../admission/identify-caller.js';
import { Runtime } from '../admission/runtime.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { Identity as CallerIdentity } from '../identity/identity.js';
import { ClientAddresses, dottedQuadValue } from './client-addresses.js';
import type { LogRecord } from './log-record.js';
import { ReplayHolds } from './replay-holds.js';
import type { ReplayOutcome } from './replay-outcome.js';
import { ReplaySettlement, type ResponseFacts } from './replay-settle.js';
import { ReplayTally } from './replay-tally.js';

/**
 * Lines decided together by {@link ReplayEngine.admitBatch}: enough for the memory loads of one batch to overlap,
 * few enough that its lines stay in the processor's caches (8 to 512 measured within the noise of each other).
 */
export const REPLAY_BATCH = 32;

const NO_HEADERS: IncomingHttpHeaders = Object.freeze({}) as IncomingHttpHeaders;

/**
 * A log line as the gateway's admission sees a request; the recorded caller travels with it. One instance is
 * filled per line and reused while admission answers in the same tick (it keeps no reference to a request it has
 * decided); a request that waits in a queue keeps its instance, and the engine takes a new one.
 */
class ReplayRequest implements GatewayRequest {
  method = 'GET';
  path = '/';
  readonly headers = NO_HEADERS;
  readonly remoteAddress: undefined = undefined;
  clientIp: string | undefined = undefined;
  clientIpKey: string | undefined = undefined;
  readonly trustIdentityHeaders = false;
  cost = 1;
  readonly correlationId = 'replay';
  caller: CallerIdentity | undefined = undefined;

  /** Fills this request from a line and its client (`undefined` for none); returns it. */
  set(r: LogRecord, ip: string | undefined, ipKey: string | undefined, cost = r.cost): this {
    this.method = r.method;
    this.path = r.target;
    this.clientIp = ip;
    this.clientIpKey = ipKey;
    this.cost = cost;
    this.caller = r.identified
      ? {
          source: 'headers',
          tenant: r.tenant,
          client: r.client,
          user: r.user,
          tier: r.tier,
          apiKeyHash: r.apiKeyHash,
        }
      : undefined;
    return this;
  }
}

const recordedCaller = (r: GatewayRequest) => (r as ReplayRequest).caller;

/**
 * Runs log lines through one configuration's admission, exactly as the gateway would have decided them: the
 * gateway's {@link Runtime} (the same `sluice/http` evaluation as the proxy, the decision API and the Envoy
 * service: canonical target, exemptions, identity, tiers, endpoint rules, classes, costs, queues) on a memory store
 * bounded by the configuration's `maxTrackedKeys`, whatever the store of the file, driven by a {@link ManualClock}
 * set from each line's time. Nothing sleeps: a request that waits in a queue is admitted when the log's time passes
 * its turn. Time never goes back: a line older than the newest one seen is decided at the newest time (logs
 * written by several workers are out of order by a little), and counted.
 */
export class ReplayEngine {
  readonly config: GatewayConfig;
  readonly clock: ManualClock;
  readonly store: MemoryStore;
  readonly runtime: Runtime;
  readonly tally: ReplayTally;
  /** The responses still holding concurrency slots, ended at each line's time plus its duration. */
  readonly holds: ReplayHolds;
  /** Costs settled from each line's status, size and cost (`cost:`, `count:`). */
  readonly settlement: ReplaySettlement;
  /** Lines decided at a later time than their own, and the largest such difference in milliseconds. */
  outOfOrder = 0;
  maxSkewMs = 0;
  /**
   * Lines whose client is no IP address (a host name logged instead of the address): decided as a request
   * without a client address (one key, `ip:unknown`), and the first such text.
   */
  clientsNotIp = 0;
  clientNotIpExample: string | undefined;
  /** Lines with no client address and no caller identity: decided as one client, the key `ip:unknown`. */
  clientsMissing = 0;
  firstMs = Number.NaN;
  lastMs = Number.NaN;
  #pending = new Set<Promise<unknown>>();
  #nextSweep = Number.NaN;
  #request = new ReplayRequest();
  readonly #addresses = new ClientAddresses();
  /** Per line of a batch: its client's address and key, found before the batch is decided. */
  readonly #batchIps: (string | undefined)[] = new Array<string | undefined>(REPLAY_BATCH).fill(undefined);
  readonly #batchKeys: (string | undefined)[] = new Array<string | undefined>(REPLAY_BATCH).fill(undefined);
  /** Per line of a batch: its client's dotted-quad value, or -1 (`ClientAddresses.touch`). */
  readonly #batchValues = new Float64Array(REPLAY_BATCH);
  /** Per line of a batch: its client's address slot (`ClientAddresses.slot`), read when its key is known. */
  readonly #batchSlots = new Int32Array(REPLAY_BATCH);
  /** Per line of a batch: the address slot of a client whose key had no buckets before the batch, or -1. */
  readonly #batchLearn = new Int32Array(REPLAY_BATCH).fill(-1);

  /**
   * @param config - the resolved configuration.
   * @param keyCap - the most limited keys the report names; default the store's key cap.
   */
  constructor(config: GatewayConfig, keyCap = config.maxTrackedKeys) {
    this.config = config;
    this.clock = new ManualClock(0);
    // The sweeper runs on the log's time below, never on a real timer.
    this.store = new MemoryStore({
      maxTrackedKeys: config.maxTrackedKeys,
      sweepIntervalMs: 0,
      clock: this.clock,
    });
    const clock = this.clock;
    // Replay reads decisions, never response headers or bodies: building them for every request would cost a
    // fifth of the replay (headers) and a thirtieth (the bodies of denials). Neither changes a decision.
    const decideOnly: GatewayConfig = { ...config, headers: { mode: 'none' } };
    this.runtime = new Runtime(decideOnly, this.store, undefined, {
      clock,
      now: () => clock.now(),
      recordedIdentity: recordedCaller,
      decisionsOnly: true,
    });
    this.tally = new ReplayTally(config.defaultTier, keyCap);
    this.holds = new ReplayHolds(config);
    this.settlement = new ReplaySettlement(config);
  }

  /**
   * Decides one request at its line's time and counts it.
   *
   * @param r - the line's request.
   * @param line - its line number and `log` its log, for the report.
   * @returns the verdict ({@link outcomeOf} tells what the client saw), or a promise of it for a request that
   *   waits in a queue (or a JWT-less identity that still answers later); the counts include it once it settles.
   * @throws SluiceError `ERR_INVALID_COST` for a cost no request can carry.
   */
  admit(r: LogRecord, line: number, log: string): Verdict | Promise<Verdict> {
    const a = r.clientIp;
    const addresses = this.#addresses;
    const known = a !== undefined && addresses.lookup(a);
    return this.#decide(r, known ? addresses.ip : undefined, known ? addresses.key : undefined, line, log);
  }

  /**
   * Decides a batch of lines in their order, exactly as {@link ReplayEngine.admit} would one after the other, but
   * finds every line's client and reads its buckets first: the memory loads of the batch then overlap, where line
   * after line each waited for its own (D-G64).
   *
   * @param records - the lines' requests; the first `count` are decided.
   * @param lines - their line numbers, and `log` their log, for the report.
   * @param out - receives each line's verdict (as `admit` returns it), or `undefined` for a line admission refused
   *   (a cost no request can carry: the caller counts it as an unknown line).
   */
  admitBatch(
    records: readonly LogRecord[],
    count: number,
    lines: Int32Array,
    log: string,
    out: (Verdict | Promise<Verdict> | undefined)[],
  ): void {
    const addresses = this.#addresses;
    const store = this.store;
    const ips = this.#batchIps;
    const keys = this.#batchKeys;
    const values = this.#batchValues;
    const learn = this.#batchLearn;
    const slots = this.#batchSlots;
    const startedOver = addresses.startedOver;
    // Every line's address slot is read before any is looked up: the loads overlap (see ClientAddresses.touch),
    // the values computed first so that the loop of loads is short (D-G172).
    for (let i = 0; i < count; i++) {
      const a = records[i].clientIp;
      values[i] = a === undefined ? -1 : dottedQuadValue(a);
    }
    for (let i = 0; i < count; i++) if (values[i] >= 0) addresses.touchValue(values[i]);
    // Then every line is looked up, and only then are the keys' buckets read: in one loop, a line's prefetch filled
    // the processor's window before the next line's lookup could start, and the loads of a batch waited one after
    // the other (D-G170).
    for (let i = 0; i < count; i++) {
      const a = records[i].clientIp;
      if (a !== undefined && addresses.lookup(a, values[i])) {
        ips[i] = addresses.ip;
        keys[i] = addresses.key;
        slots[i] = addresses.slot;
      } else {
        ips[i] = undefined;
        keys[i] = undefined;
      }
    }
    // A table that started over in the batch may have given earlier lines' slots to other addresses.
    const slotsHeld = addresses.startedOver === startedOver;
    for (let i = 0; i < count; i++) {
      const key = keys[i];
      // A recorded caller is keyed by its identity, which admission builds: only an address key is known here.
      if (key === undefined || records[i].identified) continue;
      const at = slotsHeld ? slots[i] : -1;
      if (at < 0) store.prefetch(key);
      else {
        // The place the store gave this client's key last time spares the key's lookup while it holds.
        const place = store.prefetch(key, addresses.place(at), addresses.placedAt(at));
        addresses.keepPlace(at, place, store.placesMoved);
        if (place < 0) learn[i] = at;
      }
    }
    for (let i = 0; i < count; i++) {
      try {
        out[i] = this.#decide(records[i], ips[i], keys[i], lines[i], log);
      } catch {
        out[i] = undefined;
      }
    }
    // A client whose key had no buckets has them now, most often: their place is learnt while the key's entry is
    // still in the caches, where the client's next line would look it up cold (D-G139). A table that started over
    // in the batch may have given the slots to other addresses: then nothing is learnt.
    const slotsHold = addresses.startedOver === startedOver;
    for (let i = 0; i < count; i++) {
      const at = learn[i];
      if (at < 0) continue;
      learn[i] = -1;
      if (slotsHold && addresses.place(at) < 0)
        addresses.keepPlace(at, store.placeOf(keys[i] as string), store.placesMoved);
    }
    // The strings go with the table's, not with the batch.
    ips.fill(undefined, 0, count);
    keys.fill(undefined, 0, count);
  }

  /** {@link ReplayEngine.admit} once the client is known: `ip` and `ipKey` undefined for a line without one. */
  #decide(
    r: LogRecord,
    ip: string | undefined,
    ipKey: string | undefined,
    line: number,
    log: string,
  ): Verdict | Promise<Verdict> {
    const t = this.#advance(r.timeMs);
    // Responses that ended by this line's time (also one of the same millisecond) give back their slots first.
    if (this.holds.next <= t) this.holds.drain(t);
    if (ip === undefined) {
      if (r.clientIp !== undefined) this.#notIp(r.clientIp);
      else if (!r.identified) this.clientsMissing++;
    }
    const rt = this.runtime;
    if (!this.config.enabled && rt.http.canonicalTarget(r.target).ok) {
      const v: Verdict = { action: 'exempt', status: 200, outcome: 'exempt_disabled', headers: [] };
      this.tally.record(v, 'exempt', t, line, log);
      return v;
    }
    const v = rt.http.evaluate(this.#request.set(r, ip, ipKey, this.settlement.admissionCost(r)));
    if (!isPromiseLike(v)) {
      this.tally.record(v, outcomeOf(v), t, line, log);
      if (v.observer !== undefined) this.#ended(v, r, r.durationMs, t);
      return v;
    }
    // The waiting request holds on to its instance.
    this.#request = new ReplayRequest();
    return this.#later(v, r, t, line, log);
  }

  /**
   * Counts a verdict that comes later (a request waiting in a queue), in a method of its own: a closure over
   * `#decide`'s variables would allocate a context on every line (D-G141).
   */
  #later(v: Promise<Verdict>, r: LogRecord, t: number, line: number, log: string): Promise<Verdict> {
    const durationMs = r.durationMs;
    const facts = this.settlement.active ? ReplaySettlement.facts(r) : undefined;
    const p = Promise.resolve(v).then((x) => {
      this.tally.record(x, outcomeOf(x), t, line, log);
      // A queued request takes its slots when its wait is over, and holds them from then.
      if (x.observer !== undefined) this.#ended(x, facts, durationMs, t + (x.decision?.delayMs ?? 0));
      return x;
    });
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
    return p;
  }

  /**
   * Gives a verdict's decision back to the store once the verdict has been read for the last time (counted,
   * compared, seen by `onDecision`): the store writes a later decision into it, and a known client's line then
   * allocates no decision (D-G171), no verdict and no checks list (D-G194). A promise, a verdict without a
   * decision and one whose observer is still to end (it may read its decision then) keep theirs.
   *
   * @param v - what {@link ReplayEngine.admitBatch} gave for a line, read for the last time.
   */
  recycle(v: Verdict | Promise<Verdict> | undefined): void {
    if (v === undefined || isPromiseLike(v)) return;
    const d = v.decision;
    if (d === undefined || v.observer !== undefined) return;
    // The verdict and its checks list too: the next lines' are written into them (D-G194).
    this.runtime.http.recycle(v);
    this.store.recycle(d);
  }

  /**
   * Lets every request still waiting in a queue reach its turn (the log's time runs on past the last line) and
   * resolves once all are counted.
   */
  async finish(): Promise<void> {
    while (this.#pending.size > 0) {
      // Waits register with the clock a few microtasks after their reservation.
      await new Promise((r) => setImmediate(r));
      this.clock.set(this.clock.now() + 3_600_000);
      await Promise.race([Promise.all(this.#pending), new Promise((r) => setImmediate(r))]);
    }
    // Every response has ended by the end of the log.
    this.holds.drainAll();
  }

  /** Requests still waiting in a queue. */
  get pending(): number {
    return this.#pending.size;
  }

  /**
   * Ends an admitted response's observer as the log tells it: its cost settled from the line's status, size and
   * cost (`cost:`, `count:`), its concurrency slots held for its duration.
   */
  #ended(v: Verdict, facts: ResponseFacts | undefined, durationMs: number, startMs: number): void {
    const end = facts !== undefined && this.settlement.active ? this.settlement.play(v, facts) : undefined;
    if (this.holds.active) this.holds.release(v, durationMs, startMs, end);
    else if (end !== undefined) v.observer?.end(end);
  }

  #notIp(text: string): void {
    this.clientsNotIp++;
    // A copy: the text is a slice of its read block.
    this.clientNotIpExample ??= detached(text);
  }

  #advance(timeMs: number): number {
    if (Number.isNaN(this.firstMs)) {
      this.firstMs = timeMs;
      this.lastMs = timeMs;
      this.clock.set(timeMs);
      this.#nextSweep = timeMs + this.config.sweepIntervalMs;
      return timeMs;
    }
    if (timeMs <= this.lastMs) {
      if (timeMs < this.lastMs) {
        this.outOfOrder++;
        if (this.lastMs - timeMs > this.maxSkewMs) this.maxSkewMs = this.lastMs - timeMs;
      }
      return this.lastMs;
    }
    this.lastMs = timeMs;
    this.clock.set(timeMs);
    if (timeMs >= this.#nextSweep && this.config.sweepIntervalMs > 0) {
      // Full buckets decide like missing ones: a sweep changes a decision only by sparing a later eviction, and
      // evictions start at the key cap. Below half of it, the sweep is skipped (it cost a twentieth of the
      // replay, dropping buckets that the next request put back); the table reaches the cap before the next
      // interval only if half the cap in new buckets arrives within one.
      if (this.store.size * 2 >= this.config.maxTrackedKeys) this.store.sweep();
      this.#nextSweep = timeMs + this.config.sweepIntervalMs;
    }
    return timeMs;
  }
}

/** A verdict as what the client saw. */
export function outcomeOf(v: Verdict): ReplayOutcome {
  if (v.action === 'exempt') return 'exempt';
  if (v.action === 'allow') return v.decision !== undefined && v.decision.delayMs > 0 ? 'queued' : 'allowed';
  return v.status === 429 ? 'limited' : 'refused';
}
