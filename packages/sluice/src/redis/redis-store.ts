import {
  type Check,
  type Clock,
  type Decision,
  ErrorCode,
  type EvaluateMode,
  evaluate,
  monotonicClock,
  type Policy,
  type RateLimitStore,
  SluiceError,
} from '../core/index.js';
import { BatchQueue, type Entry, newEntry, OP_OF, type Op } from './batch-queue.js';
import { Breaker, probeTimer } from './breaker.js';
import { CallTimeouts, timeoutError } from './call-timeout.js';
import type { RedisScriptClient } from './client-adapter.js';
import { DenyCache } from './deny-cache.js';
import { Fallback } from './fallback.js';
import { KeyLayout } from './key-layout.js';
import { holdsSlots, LeaseBook } from './lease-book.js';
import { SCRIPT } from './lua-script.js';
import {
  type RedisStoreOptions,
  type ResolvedRedisStoreOptions,
  resolveRedisStoreOptions,
} from './redis-store-options.js';
import { newCounters, type RedisStoreCounters, type RedisStoreStats } from './redis-store-stats.js';
import { ScriptArgs } from './script-args.js';
import { callScript } from './script-call.js';
import { type AnswerHandler, readScriptReply } from './script-reply.js';
import { decideAcrossSlots, eachSlot, type SlotGroup, slotGroups } from './slot-groups.js';
import { logStoreTransitions, type RedisStoreEvents, StoreEvents } from './store-events.js';

/**
 * Token buckets in Redis or Valkey, shared by every node: the store for a fleet.
 *
 * Every call (decide, reserve, peek, refund, reset) is one Lua script that checks and updates all of a request's
 * policies atomically, with the engine's exact fixed-point arithmetic on the server's clock. The script returns
 * each bucket's units as strings and the decision is built here by the shared `evaluate`, so Redis and memory
 * stores cannot disagree on a decision or a header value. Concurrent calls share script calls (one per Cluster
 * slot, see batch-queue.ts), a just-denied key is denied locally until its retry time (deny-cache.ts), and an
 * unreachable Redis is handled by the configured failure mode (fallback.ts) behind a breaker (breaker.ts).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { Limiter } from 'sluice';
 * import { RedisStore, reconnectBackoff } from 'sluice/redis';
 * const client = new Redis({ enableOfflineQueue: false, connectTimeout: 1000, retryStrategy: reconnectBackoff() });
 * const store = new RedisStore({ client, failureMode: 'local', nodeCount: 4, logger: pino() });
 * const limiter = new Limiter({ policies: [{ name: 'rl.write', quota: 120, window: 60, burst: 30 }], store });
 * const d = await limiter.check('rl.write', 'user:42');
 * ```
 */
export class RedisStore implements RateLimitStore {
  /** `redis`, for logs and metrics labels. */
  readonly kind = 'redis';
  /** The resolved options. */
  readonly options: ResolvedRedisStoreOptions;
  readonly #client: RedisScriptClient;
  readonly #layout: KeyLayout;
  readonly #clock: Clock;
  readonly #injected: boolean;
  readonly #deny: DenyCache | undefined;
  readonly #fallback: Fallback;
  readonly #events = new StoreEvents();
  readonly #n: RedisStoreCounters = newCounters();
  readonly #breaker: Breaker;
  readonly #queue: BatchQueue;
  readonly #args: ScriptArgs;
  readonly #timeouts: CallTimeouts<{ readonly entries: Entry[]; readonly epoch: number }>;
  readonly #leases: LeaseBook;
  #closed = false;

  /**
   * @param options - see {@link RedisStoreOptions}.
   * @throws SluiceError `ERR_INVALID_OPTION` for an invalid option.
   */
  constructor(options: RedisStoreOptions) {
    this.options = resolveRedisStoreOptions(options);
    const o = this.options;
    this.#client = o.client;
    this.#layout = new KeyLayout(o.prefix, o.hashTag);
    this.#injected = o.clock !== undefined;
    this.#clock = o.clock ?? monotonicClock;
    // An id for this store's concurrency leases: random, since two gateways may start in the same millisecond.
    const instance = `${Math.random().toString(36).slice(2, 10)}${Date.now().toString(36)}`;
    this.#args = new ScriptArgs(this.#injected ? '60000' : '0', instance, o.leaseTimeMs);
    this.#leases = new LeaseBook(probeTimer(o.clock), o.leaseTimeMs, () => this.renewLeases());
    this.#timeouts = new CallTimeouts(o.timeoutMs, (call) => {
      this.#n.timeouts++;
      this.#callFailed(call.payload.entries, timeoutError(o.timeoutMs));
    });
    this.#deny = o.denyCacheEntries > 0 ? new DenyCache(o.denyCacheEntries) : undefined;
    this.#fallback = new Fallback(o.failureMode, o.nodeCount, o.probeIntervalMs, this.#clock);
    this.#breaker = new Breaker({
      clock: this.#clock,
      failureMode: o.failureMode,
      failureThreshold: o.failureThreshold,
      probeIntervalMs: o.probeIntervalMs,
      timeoutMs: o.timeoutMs,
      timer: probeTimer(o.clock),
      ping: () => this.#client.loadScript?.(SCRIPT) ?? this.#client.ping(),
      onConnect: (listener) => this.#client.onConnect?.(listener),
      reconnected: () => this.#deny?.clear(),
      counters: this.#n,
      events: this.#events,
    });
    this.#queue = new BatchQueue({
      maxEntries: o.batchMaxEntries,
      maxInFlight: o.batchMaxInFlight,
      timeoutMs: o.timeoutMs,
      cluster: this.#client.cluster,
      send: (entries) => this.#send(entries),
      expire: (entry) => {
        this.#n.timeouts++;
        this.#fail(entry, timeoutError(o.timeoutMs));
      },
    });
    // Redis may have lost every bucket during the outage (a restart without persistence): a remembered denial
    // is no longer an upper bound of what it holds, so Redis decides each key again.
    this.#events.on('recover', () => this.#deny?.clear());
    if (o.logger !== undefined) logStoreTransitions(this, o.logger);
  }

  /** The Redis key of one bucket (for operators inspecting Redis, and for tests). */
  keyOf(policy: Policy, key: string): string {
    return this.#layout.key(policy, key);
  }

  /**
   * Subscribes to `failover` (switched to the failure mode), `recover` (back on Redis) or `error` (a script call
   * failed). A listener that throws is ignored: observability never breaks a decision.
   *
   * @returns this store, for chaining.
   */
  on<K extends keyof RedisStoreEvents>(event: K, listener: (e: RedisStoreEvents[K]) => void): this {
    this.#events.on(event, listener);
    return this;
  }

  /** Removes a listener added by {@link RedisStore.on}. */
  off<K extends keyof RedisStoreEvents>(event: K, listener: (e: RedisStoreEvents[K]) => void): this {
    this.#events.off(event, listener);
    return this;
  }

  /** A snapshot of the counters and the current state. */
  stats(): RedisStoreStats {
    const denyCacheSize = this.#deny?.size ?? 0;
    return {
      ...this.#n,
      state: this.#breaker.state,
      failureMode: this.options.failureMode,
      denyCacheSize,
      trackedKeys: denyCacheSize + this.#fallback.size,
      evictions: this.#fallback.evictions,
    };
  }

  /**
   * Decides all checks at once in Redis (see `RateLimitStore.decide`); a held denial is answered locally, an
   * unreachable Redis by the failure mode. Never rejects for an outage. On a Cluster, checks in different slots
   * run in one script per slot, and a denial in any gives back what the others took (slot-groups.ts).
   *
   * @throws SluiceError (as a rejection) `ERR_STORE_CLOSED`, `ERR_INVALID_OPTION` for a policy name with braces.
   */
  decide(checks: readonly Check[], cost: number): Promise<Decision> {
    return this.#decide(checks, cost, 'decide');
  }

  /** Like {@link RedisStore.decide}, with queue debt within each policy's bounds (see `RateLimitStore.reserve`). */
  reserve(checks: readonly Check[], cost: number): Promise<Decision> {
    return this.#decide(checks, cost, 'reserve');
  }

  /** The decision {@link RedisStore.decide} would make, taking nothing. */
  peek(checks: readonly Check[], cost: number): Promise<Decision> {
    return this.#decide(checks, cost, 'peek');
  }

  /** Returns tokens; while Redis is unreachable the refund goes to the local store (`local`) or is dropped and counted. */
  async refund(checks: readonly Check[], cost: number): Promise<void> {
    const groups = this.#groups(checks);
    if (groups !== undefined) return eachSlot(groups, (c) => this.refund(c, cost));
    const entry = this.#entry(checks, cost, 'f', undefined);
    this.#deny?.forget(entry.keys);
    this.#leases.release(checks, entry.keys, cost);
    if (!this.#breaker.usable()) {
      this.#fallbackRefund(checks, cost);
      return;
    }
    await this.#queue.push(entry);
  }

  /** Settles a cost after the response: an entry of the next batch; while Redis is unreachable, as a refund is. */
  async settle(checks: readonly Check[], deltaTokens: number): Promise<void> {
    const groups = this.#groups(checks);
    if (groups !== undefined) return eachSlot(groups, (c) => this.settle(c, deltaTokens));
    const entry = this.#entry(checks, deltaTokens, 's', undefined);
    this.#deny?.forget(entry.keys); // a remembered level is wrong either way now
    if (this.#breaker.usable()) await this.#queue.push(entry);
    else this.#fallbackRefund(checks, deltaTokens, 's');
  }

  /**
   * Forgets buckets.
   *
   * @throws SluiceError `ERR_STORE_UNAVAILABLE` when Redis does not answer (the local fallback is reset anyway).
   */
  async reset(checks: readonly Check[]): Promise<void> {
    const groups = this.#groups(checks);
    if (groups !== undefined) return eachSlot(groups, (c) => this.reset(c));
    const entry = this.#entry(checks, 1, 'x', undefined);
    this.#deny?.forget(entry.keys);
    this.#fallback.reset(checks);
    if (!this.#breaker.usable()) {
      throw new SluiceError(ErrorCode.StoreUnavailable, 'Redis is unavailable; the buckets were not reset');
    }
    await this.#queue.push(entry);
  }

  /**
   * Drops what this process holds of these buckets (deny cache entries, the `local` failure mode's buckets)
   * without asking Redis. For a reset made through another store on the same Redis, in another thread of this
   * process (the gateway's `sluice serve --threads`): call it after that reset completed, so that this store
   * neither denies from an answer given before the reset nor remembers one still in flight (D-R08).
   */
  forget(checks: readonly Check[]): void {
    if (this.#closed) return;
    if (this.#deny !== undefined) {
      const keys = checks.map((c) => this.#layout.key(c.policy, c.key));
      this.#deny.forget(keys);
    }
    this.#fallback.reset(checks);
  }

  /**
   * Renews the leases of the concurrency slots this store holds (its timer calls it every third of `leaseTimeMs`):
   * one entry per key held, riding the batches like any call, each setting this store's count in Redis to the
   * slots it still runs. Skipped while Redis is unreachable: the leases then end, and the slots with them.
   */
  renewLeases(): Promise<void> {
    if (this.#closed || !this.#breaker.usable()) return Promise.resolve();
    const sent = this.#leases
      .renewals()
      .map((r) => this.#queue.push(this.#entry(r.checks, r.cost, 'l', undefined)));
    return Promise.all(sent).then(noop);
  }

  /** Stops accepting calls; calls already accepted complete. The client connection stays open (it is the caller's). */
  close(): void {
    this.#closed = true;
    this.#leases.close();
    this.#breaker.close();
    this.#deny?.clear();
    this.#fallback.close();
  }

  // Not async: a call that goes to Redis returns the queue's own promise instead of wrapping it in another one
  // (one promise and one microtask less per decision); errors still arrive as rejections.
  #decide(checks: readonly Check[], cost: number, mode: EvaluateMode): Promise<Decision> {
    try {
      const groups = this.#groups(checks);
      if (groups !== undefined) {
        const one = (c: Check[]) => this.#decide(c, cost, mode);
        return decideAcrossSlots(checks, groups, cost, mode, one, (c) => this.refund(c, cost));
      }
      const entry = this.#entry(checks, cost, OP_OF[mode], mode);
      this.#n.decisions++;
      if (this.#deny !== undefined) {
        const denied = this.#deny.lookup(checks, entry.keys, cost, mode, entry.local);
        if (denied !== undefined) {
          this.#n.denyCacheHits++;
          return Promise.resolve(denied);
        }
      }
      if (!this.#breaker.usable()) return Promise.resolve(this.#fallbackDecision(entry, mode));
      const d = this.#queue.push(entry) as Promise<Decision>;
      // Slots taken are counted for their leases' renewal; a peek takes none.
      return mode === 'peek' || !holdsSlots(checks) ? d : this.#leases.track(checks, entry.keys, cost, d);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** On a Cluster, the checks of a call split by slot when they span several; otherwise `undefined`. */
  #groups(checks: readonly Check[]): SlotGroup[] | undefined {
    return this.#client.cluster && !this.#closed ? slotGroups(this.#layout, checks) : undefined;
  }

  #entry(checks: readonly Check[], cost: number, op: Op, mode: EvaluateMode | undefined): Entry {
    if (this.#closed) throw new SluiceError(ErrorCode.StoreClosed, 'the Redis store is closed');
    const local = Math.floor(this.#clock.now());
    const at = this.#injected ? String(local) : '';
    return newEntry(
      this.#layout,
      this.#client.cluster,
      checks,
      cost,
      op,
      mode,
      at,
      local,
      this.#deny?.epoch ?? 0,
    );
  }

  #send(entries: Entry[]): void {
    const { keys, args } = this.#args.encode(entries);
    const call = this.#timeouts.start({ entries, epoch: this.#breaker.epoch });
    this.#n.scriptCalls++;
    if (entries.length > 1) this.#n.batchedScriptCalls++;
    callScript(this.#client, keys, args, this.#n).then(
      (reply) => {
        if (!this.#timeouts.finish(call)) return;
        this.#breaker.succeeded(call.payload.epoch);
        this.#settle(entries, reply);
        this.#queue.done();
      },
      (error: unknown) => {
        if (!this.#timeouts.finish(call)) return;
        this.#callFailed(entries, error);
      },
    );
  }

  #callFailed(entries: Entry[], error: unknown): void {
    this.#breaker.failed(error);
    for (const e of entries) this.#fail(e, error);
    this.#queue.done(true);
  }

  #settle(entries: Entry[], reply: unknown): void {
    if (readScriptReply(entries, reply, this.#decided)) return;
    const error = new SluiceError(ErrorCode.StoreUnavailable, 'the rate-limit script returned no array');
    for (const e of entries) this.#fail(e, error);
  }

  /** Resolves a decision from the script's answer: its flag, and each check's units before the decision. */
  readonly #decided: AnswerHandler = (e, allowed, units, phases) => {
    const decision = evaluate(e.checks, units, e.cost, e.mode as EvaluateMode, phases);
    if (decision.allowed !== allowed) {
      // Only a script that drifted from evaluate() could get here; never hand out a decision it did not make.
      this.#fail(
        e,
        new SluiceError(ErrorCode.StoreUnavailable, 'the rate-limit script and the engine disagree'),
      );
      return;
    }
    this.#n.redisDecisions++;
    this.#deny?.answered(e.checks, e.keys, e.denyEpoch, units, phases, decision, e.local);
    e.resolve(decision);
  };

  #fail(e: Entry, error: unknown): void {
    try {
      if (e.mode !== undefined) {
        e.resolve(this.#fallbackDecision(e, e.mode));
        return;
      }
      // A renewal Redis did not take: the next one may, or the lease ends.
      if (e.op === 'l') {
        e.resolve(undefined);
        return;
      }
      if (e.op === 'f' || e.op === 's') {
        this.#fallbackRefund(e.checks, e.cost, e.op);
        e.resolve(undefined);
        return;
      }
    } catch (fallbackError) {
      // The local failure mode refused the call itself (ERR_TOO_MANY_POLICIES): the caller hears it.
      e.reject(fallbackError);
      return;
    }
    e.reject(
      new SluiceError(
        ErrorCode.StoreUnavailable,
        'Redis is unavailable; the buckets were not reset',
        {},
        { cause: error },
      ),
    );
  }

  #fallbackDecision(e: Entry, mode: EvaluateMode): Decision {
    this.#n.fallbackDecisions++;
    return this.#fallback.decide(e.checks, e.cost, mode);
  }

  /** A refund (`f`) or a settled cost (`s`, its signed delta) on the local buckets, or counted as lost. */
  #fallbackRefund(checks: readonly Check[], cost: number, op: 'f' | 's' = 'f'): void {
    const kept = op === 'f' ? this.#fallback.refund(checks, cost) : this.#fallback.settle(checks, cost);
    if (!kept) this.#n.droppedRefunds++;
  }
}

function noop(): void {}
