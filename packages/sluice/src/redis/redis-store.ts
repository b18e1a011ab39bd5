import {
  type Check,
  type Clock,
  type Decision,
  definePolicy,
  ErrorCode,
  type EvaluateMode,
  evaluate,
  monotonicClock,
  NO_OUTCOMES,
  type Policy,
  type PolicyOutcome,
  type RateLimitStore,
  SluiceError,
} from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import type { RedisScriptClient } from './client-adapter.js';
import { clusterSlot } from './cluster-slot.js';
import { DenyCache } from './deny-cache.js';
import { KeyLayout } from './key-layout.js';
import { SCRIPT, SCRIPT_SHA } from './lua-script.js';
import {
  type FailureMode,
  type RedisStoreOptions,
  type ResolvedRedisStoreOptions,
  resolveRedisStoreOptions,
} from './redis-store-options.js';

type Op = 'd' | 'r' | 'p' | 'f' | 'x';
const OP_OF: Record<EvaluateMode, Op> = { decide: 'd', reserve: 'r', peek: 'p' };

interface Entry {
  readonly op: Op;
  readonly mode: EvaluateMode | undefined;
  readonly checks: readonly Check[];
  readonly keys: readonly string[];
  readonly cost: number;
  /** The injected clock's reading, or '' for the server's TIME. */
  readonly now: string;
  /** Local time of the call, for the deny cache and the breaker. */
  readonly local: number;
  readonly slot: number;
  /** performance.now() when queued: a call never waits longer than timeoutMs for its turn either. */
  readonly queuedAt: number;
  resolve: (value: Decision | undefined) => void;
  reject: (error: unknown) => void;
}

/** Payload of the `failover` event: the store stopped asking Redis and follows its failure mode. */
export interface FailoverEvent {
  readonly failureMode: FailureMode;
  /** The error that tipped the breaker (network error, timeout, script error). */
  readonly cause: unknown;
}

/** Payload of the `recover` event: a probe got an answer and decisions come from Redis again. */
export interface RecoverEvent {
  /** Milliseconds (store clock) spent in the failure mode. */
  readonly downtimeMs: number;
}

/** Events of a {@link RedisStore}, for logs and metrics exporters. */
export interface RedisStoreEvents {
  failover: FailoverEvent;
  recover: RecoverEvent;
}

/** Counters of a {@link RedisStore}, monotonic since construction, for metrics exporters. */
export interface RedisStoreStats {
  /** `redis` while Redis answers, `fallback` while the failure mode decides. */
  readonly state: 'redis' | 'fallback';
  readonly failureMode: FailureMode;
  /** decide, reserve and peek calls. */
  readonly decisions: number;
  /** Of those, answered by the script. */
  readonly redisDecisions: number;
  /** Of those, denied by the local deny cache without a round trip. */
  readonly denyCacheHits: number;
  /** Of those, answered by the failure mode (Redis down, slow or breaker open). */
  readonly fallbackDecisions: number;
  /** Script calls sent (each is one round trip carrying one or more batched calls). */
  readonly scriptCalls: number;
  /** Calls that carried more than one entry. */
  readonly batchedScriptCalls: number;
  /** Script calls that failed (error or timeout). */
  readonly errors: number;
  /** Of those, timeouts. */
  readonly timeouts: number;
  /** NOSCRIPT replies recovered by EVAL (after a restart, failover or SCRIPT FLUSH). */
  readonly scriptReloads: number;
  /** Switches to the failure mode. */
  readonly failovers: number;
  /** Switches back to Redis. */
  readonly recoveries: number;
  /** Probes sent while switched. */
  readonly probes: number;
  /** Refunds lost because Redis did not answer (failure modes `open` and `closed`). */
  readonly droppedRefunds: number;
  /** Buckets held by the deny cache now. */
  readonly denyCacheSize: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type Counters = Omit<Mutable<RedisStoreStats>, 'state' | 'failureMode' | 'denyCacheSize'>;

function timeoutError(ms: number): SluiceError {
  return new SluiceError(ErrorCode.StoreUnavailable, `Redis did not answer within ${ms} ms`, {
    timeoutMs: ms,
  });
}

function isNoScript(error: unknown): boolean {
  return String((error as { message?: unknown } | undefined)?.message ?? error).includes('NOSCRIPT');
}

/**
 * Token buckets in Redis or Valkey, shared by every node: the store for a fleet.
 *
 * Every call (decide, reserve, peek, refund, reset) is one Lua script that checks and updates all of a request's
 * policies atomically, with the engine's exact fixed-point arithmetic on the server's clock. The script returns
 * each bucket's units as strings and the decision is built here by the shared `evaluate`, so Redis and memory
 * stores cannot disagree on a decision or a header value. Concurrent calls share script calls (one per Cluster
 * slot), a just-denied key is denied locally until its retry time, and an unreachable Redis is handled by the
 * configured failure mode behind a breaker.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { Limiter } from 'sluice';
 * import { RedisStore } from 'sluice/redis';
 * const store = new RedisStore({ client: new Redis({ enableOfflineQueue: false }), failureMode: 'local', nodeCount: 4 });
 * const limiter = new Limiter({ policies: [{ name: 'rl.write', quota: 120, window: 60, burst: 30 }], store });
 * const d = await limiter.check('rl.write', 'user:42');
 * store.on('failover', (e) => log.warn({ cause: e.cause }, 'rate limits follow the failure mode'));
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
  readonly #slack: string;
  readonly #deny: DenyCache | undefined;
  readonly #local: MemoryStore | undefined;
  readonly #localPolicies = new WeakMap<Policy, Policy>();
  readonly #args = new WeakMap<Policy, readonly string[]>();
  readonly #listeners: { [K in keyof RedisStoreEvents]: Set<(e: RedisStoreEvents[K]) => void> } = {
    failover: new Set(),
    recover: new Set(),
  };
  readonly #n: Counters = {
    decisions: 0,
    redisDecisions: 0,
    denyCacheHits: 0,
    fallbackDecisions: 0,
    scriptCalls: 0,
    batchedScriptCalls: 0,
    errors: 0,
    timeouts: 0,
    scriptReloads: 0,
    failovers: 0,
    recoveries: 0,
    probes: 0,
    droppedRefunds: 0,
  };
  #queue: Entry[] = [];
  #scheduled = false;
  #inFlight = 0;
  #closed = false;
  #state: 'redis' | 'fallback' = 'redis';
  #failures = 0;
  #since = 0;
  #nextProbe = 0;
  #probing = false;
  /** Bumped at each failover, so that a late answer to a call sent before it cannot count as a recovery. */
  #epoch = 0;
  readonly #flush = () => this.#flushQueue();

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
    this.#slack = this.#injected ? '60000' : '0';
    this.#deny = o.denyCacheEntries > 0 ? new DenyCache(o.denyCacheEntries) : undefined;
    if (o.failureMode === 'local') {
      this.#local = new MemoryStore({ clock: this.#clock, maxTrackedKeys: 100_000 });
    }
  }

  /** The Redis key of one bucket (for operators inspecting Redis, and for tests). */
  keyOf(policy: Policy, key: string): string {
    return this.#layout.key(policy, key);
  }

  /**
   * Subscribes to `failover` (switched to the failure mode) or `recover` (back on Redis). A listener that
   * throws is ignored: observability never breaks a decision.
   *
   * @returns this store, for chaining.
   */
  on<K extends keyof RedisStoreEvents>(event: K, listener: (e: RedisStoreEvents[K]) => void): this {
    this.#listeners[event].add(listener);
    return this;
  }

  /** Removes a listener added by {@link RedisStore.on}. */
  off<K extends keyof RedisStoreEvents>(event: K, listener: (e: RedisStoreEvents[K]) => void): this {
    this.#listeners[event].delete(listener);
    return this;
  }

  /** A snapshot of the counters and the current state. */
  stats(): RedisStoreStats {
    return {
      ...this.#n,
      state: this.#state,
      failureMode: this.options.failureMode,
      denyCacheSize: this.#deny?.size ?? 0,
    };
  }

  /**
   * Decides all checks at once in Redis (see `RateLimitStore.decide`); a held denial is answered locally, an
   * unreachable Redis by the failure mode. Never rejects for an outage.
   *
   * @throws SluiceError (as a rejection) `ERR_STORE_CLOSED`, `ERR_CROSS_SLOT`, `ERR_INVALID_OPTION` for a policy
   * name with braces.
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
    const entry = this.#entry(checks, cost, 'f', undefined);
    this.#deny?.forget(entry.keys);
    if (!this.#usable(entry.local)) {
      this.#fallbackRefund(checks, cost);
      return;
    }
    await this.#enqueue(entry);
  }

  /**
   * Forgets buckets.
   *
   * @throws SluiceError `ERR_STORE_UNAVAILABLE` when Redis does not answer (the local fallback is reset anyway).
   */
  async reset(checks: readonly Check[]): Promise<void> {
    const entry = this.#entry(checks, 1, 'x', undefined);
    this.#deny?.forget(entry.keys);
    this.#local?.reset(checks.map((c) => this.#localCheck(c)));
    if (!this.#usable(entry.local)) {
      throw new SluiceError(ErrorCode.StoreUnavailable, 'Redis is unavailable; the buckets were not reset');
    }
    await this.#enqueue(entry);
  }

  /** Stops accepting calls; calls already accepted complete. The client connection stays open (it is the caller's). */
  close(): void {
    this.#closed = true;
    this.#deny?.clear();
    this.#local?.close();
  }

  // Not async: a call that goes to Redis returns the queue's own promise instead of wrapping it in another one
  // (one promise and one microtask less per decision); errors still arrive as rejections.
  #decide(checks: readonly Check[], cost: number, mode: EvaluateMode): Promise<Decision> {
    try {
      const entry = this.#entry(checks, cost, OP_OF[mode], mode);
      this.#n.decisions++;
      if (this.#deny !== undefined) {
        const denied = this.#deny.lookup(checks, entry.keys, cost, mode, entry.local);
        if (denied !== undefined) {
          this.#n.denyCacheHits++;
          return Promise.resolve(denied);
        }
      }
      if (!this.#usable(entry.local)) return Promise.resolve(this.#fallback(checks, cost, mode));
      return this.#enqueue(entry) as Promise<Decision>;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #entry(checks: readonly Check[], cost: number, op: Op, mode: EvaluateMode | undefined): Entry {
    if (this.#closed) throw new SluiceError(ErrorCode.StoreClosed, 'the Redis store is closed');
    const n = checks.length;
    const keys: string[] = new Array(n);
    let slot = 0;
    for (let i = 0; i < n; i++) {
      keys[i] = this.#layout.key(checks[i].policy, checks[i].key);
      if (this.#client.cluster) {
        const s = clusterSlot(keys[i]);
        if (i > 0 && s !== slot) {
          throw new SluiceError(
            ErrorCode.CrossSlot,
            `checks of one call must share a hash tag on a Redis Cluster: "${keys[0]}" and "${keys[i]}" differ`,
            { keys: [keys[0], keys[i]] },
          );
        }
        slot = s;
      }
    }
    const local = Math.floor(this.#clock.now());
    return {
      op,
      mode,
      checks,
      keys,
      cost,
      now: this.#injected ? String(local) : '',
      local,
      slot,
      queuedAt: performance.now(),
      resolve: noop,
      reject: noop,
    };
  }

  #enqueue(entry: Entry): Promise<Decision | undefined> {
    return new Promise((resolve, reject) => {
      entry.resolve = resolve;
      entry.reject = reject;
      this.#queue.push(entry);
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#queue.length === 0 || this.#inFlight >= this.options.batchMaxInFlight)
      return;
    this.#scheduled = true;
    // A microtask, not a timer: calls made in the same tick share one script call, and a lone call waits for nothing.
    queueMicrotask(this.#flush);
  }

  #flushQueue(): void {
    this.#scheduled = false;
    const max = this.options.batchMaxEntries;
    this.#expireQueued();
    while (this.#queue.length > 0 && this.#inFlight < this.options.batchMaxInFlight) {
      const chunk = this.#queue.length <= max ? this.#queue : this.#queue.slice(0, max);
      this.#queue = this.#queue.length <= max ? [] : this.#queue.slice(max);
      if (!this.#client.cluster) {
        this.#send(chunk);
        continue;
      }
      const bySlot = new Map<number, Entry[]>();
      for (const e of chunk) {
        const group = bySlot.get(e.slot);
        if (group === undefined) bySlot.set(e.slot, [e]);
        else group.push(e);
      }
      for (const group of bySlot.values()) this.#send(group);
    }
  }

  /** Calls that waited a whole timeout for a free slot follow the failure mode instead of waiting on. */
  #expireQueued(): void {
    const q = this.#queue;
    if (q.length === 0) return;
    const limit = performance.now() - this.options.timeoutMs;
    if (q[0].queuedAt > limit) return;
    let kept = 0;
    for (let i = 0; i < q.length; i++) {
      const e = q[i];
      if (e.queuedAt <= limit) {
        this.#n.timeouts++;
        this.#fail(e, timeoutError(this.options.timeoutMs));
      } else q[kept++] = e;
    }
    q.length = kept;
  }

  #policyArgs(p: Policy): readonly string[] {
    let args = this.#args.get(p);
    if (args === undefined) {
      args = Object.freeze([
        String(p.quota),
        String(p.unitsPerToken),
        String(p.burst),
        p.shadow ? '1' : '0',
        String(p.queue?.limit ?? 0),
        String(p.queue?.maxWaitMs ?? 0),
      ]);
      this.#args.set(p, args);
    }
    return args;
  }

  #send(entries: Entry[]): void {
    const keys: string[] = [];
    // The call's policies go first, once each; entries then name them by index, in runs of entries that share
    // op, cost, clock reading and policies, so a run costs a few arguments besides its keys (see lua-script.ts).
    const index = new Map<Policy, string>();
    const args: string[] = [this.#slack, ''];
    for (const e of entries) {
      for (const c of e.checks) {
        if (index.has(c.policy)) continue;
        index.set(c.policy, String(index.size + 1));
        for (const a of this.#policyArgs(c.policy)) args.push(a);
      }
    }
    args[1] = String(index.size);
    let run: Entry | undefined;
    let countAt = 0;
    let count = 0;
    for (const e of entries) {
      if (run === undefined || !sameShape(run, e)) {
        if (run !== undefined) args[countAt] = String(count);
        run = e;
        count = 0;
        args.push(e.op, String(e.cost), e.now, String(e.checks.length));
        for (const c of e.checks) args.push(index.get(c.policy) as string);
        countAt = args.length;
        args.push('');
      }
      count++;
      for (const k of e.keys) keys.push(k);
    }
    args[countAt] = String(count);
    const epoch = this.#epoch;
    this.#inFlight++;
    this.#n.scriptCalls++;
    if (entries.length > 1) this.#n.batchedScriptCalls++;
    this.#withTimeout(this.#script(keys, args)).then(
      (reply) => {
        this.#inFlight--;
        this.#succeeded(epoch);
        this.#settle(entries, reply);
        this.#schedule();
      },
      (error: unknown) => {
        this.#inFlight--;
        this.#failed(error);
        for (const e of entries) this.#fail(e, error);
        this.#schedule();
      },
    );
  }

  async #script(keys: string[], args: string[]): Promise<unknown> {
    try {
      return await this.#client.evalsha(SCRIPT_SHA, keys, args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      // The server lost its script cache (restart, failover, SCRIPT FLUSH): EVAL runs it and caches it again.
      this.#n.scriptReloads++;
      return this.#client.eval(SCRIPT, keys, args);
    }
  }

  #withTimeout<T>(promise: Promise<T>): Promise<T> {
    const ms = this.options.timeoutMs;
    return new Promise<T>((resolve, reject) => {
      const start = performance.now();
      // Node starts a timer from the event loop's cached time, which can be behind performance.now(): a timer
      // may fire a little early. Re-arm for the rest, so that calls queued behind this one (expired by
      // performance.now() in #expireQueued) have really waited timeoutMs when it gives up.
      const fire = () => {
        const left = ms - (performance.now() - start);
        if (left > 0) {
          timer = setTimeout(fire, Math.ceil(left));
          return;
        }
        this.#n.timeouts++;
        reject(timeoutError(ms));
      };
      let timer = setTimeout(fire, ms);
      promise.then(
        (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        (e) => {
          clearTimeout(timer);
          reject(e);
        },
      );
    });
  }

  #settle(entries: Entry[], reply: unknown): void {
    if (!Array.isArray(reply)) {
      const error = new SluiceError(ErrorCode.StoreUnavailable, 'the rate-limit script returned no array');
      for (const e of entries) this.#fail(e, error);
      return;
    }
    let at = 0;
    for (const e of entries) {
      if (e.mode === undefined) {
        at++;
        e.resolve(undefined);
        continue;
      }
      const allowed = reply[at++] === '1';
      const n = e.checks.length;
      const units = new Float64Array(n);
      for (let i = 0; i < n; i++) units[i] = Number(reply[at++]);
      const decision = evaluate(e.checks, units, e.cost, e.mode);
      if (decision.allowed !== allowed) {
        // Only a script that drifted from evaluate() could get here; never hand out a decision it did not make.
        this.#fail(
          e,
          new SluiceError(ErrorCode.StoreUnavailable, 'the rate-limit script and the engine disagree'),
        );
        continue;
      }
      this.#n.redisDecisions++;
      if (this.#deny !== undefined) {
        // evaluate() takes nothing from `units` on a denial, so they still hold the levels before the decision.
        if (decision.allowed) this.#deny.refresh(e.keys, units, e.local);
        else this.#deny.remember(e.checks, e.keys, units, decision, e.local);
      }
      e.resolve(decision);
    }
  }

  #fail(e: Entry, error: unknown): void {
    if (e.mode !== undefined) {
      e.resolve(this.#fallback(e.checks, e.cost, e.mode));
    } else if (e.op === 'f') {
      this.#fallbackRefund(e.checks, e.cost);
      e.resolve(undefined);
    } else {
      e.reject(
        new SluiceError(
          ErrorCode.StoreUnavailable,
          'Redis is unavailable; the buckets were not reset',
          {},
          { cause: error },
        ),
      );
    }
  }

  // Breaker: Redis is asked while it answers; after `failureThreshold` failures in a row it is left alone and
  // probed every `probeIntervalMs` (on the next call, so no timer), and the first answer switches back.

  #usable(now: number): boolean {
    if (this.#state === 'redis') return true;
    if (!this.#probing && now >= this.#nextProbe) this.#probe();
    return false;
  }

  #probe(): void {
    this.#probing = true;
    this.#n.probes++;
    const epoch = this.#epoch;
    this.#withTimeout(Promise.resolve().then(() => this.#client.ping())).then(
      () => {
        this.#probing = false;
        this.#succeeded(epoch);
      },
      () => {
        this.#probing = false;
        this.#nextProbe = Math.floor(this.#clock.now()) + this.options.probeIntervalMs;
      },
    );
  }

  #succeeded(epoch: number): void {
    if (epoch !== this.#epoch) return;
    this.#failures = 0;
    if (this.#state === 'redis') return;
    this.#state = 'redis';
    this.#n.recoveries++;
    this.#emit('recover', { downtimeMs: Math.max(0, Math.floor(this.#clock.now()) - this.#since) });
  }

  #failed(error: unknown): void {
    this.#n.errors++;
    this.#failures++;
    if (this.#state === 'fallback' || this.#failures < this.options.failureThreshold) return;
    this.#state = 'fallback';
    this.#epoch++;
    this.#since = Math.floor(this.#clock.now());
    this.#nextProbe = this.#since + this.options.probeIntervalMs;
    this.#n.failovers++;
    this.#emit('failover', { failureMode: this.options.failureMode, cause: error });
  }

  #emit<K extends keyof RedisStoreEvents>(event: K, payload: RedisStoreEvents[K]): void {
    for (const listener of this.#listeners[event]) {
      try {
        listener(payload);
      } catch {
        // A failing metrics hook must not turn into a failed rate-limit decision.
      }
    }
  }

  // Failure modes.

  #fallback(checks: readonly Check[], cost: number, mode: EvaluateMode): Decision {
    this.#n.fallbackDecisions++;
    const failureMode = this.options.failureMode;
    if (failureMode === 'local' && this.#local !== undefined && !this.#closed) {
      const local = checks.map((c) => this.#localCheck(c));
      const d =
        mode === 'decide'
          ? this.#local.decide(local, cost)
          : mode === 'reserve'
            ? this.#local.reserve(local, cost)
            : this.#local.peek(local, cost);
      // Report the caller's own policies (names, identity); the levels are those of the divided local buckets.
      const outcomes = d.outcomes.map((o, i): PolicyOutcome => ({ ...o, policy: checks[i].policy }));
      const violated =
        d.violated.length === 0 ? NO_OUTCOMES : outcomes.filter((o) => o.limited && !o.policy.shadow);
      return { ...d, outcomes, violated };
    }
    const open = failureMode === 'open';
    const outcomes = checks.map(
      (c): PolicyOutcome => ({
        policy: c.policy,
        key: c.key,
        limited: false,
        remaining: open ? c.policy.burst : 0,
        resetSeconds: 0,
        retryAfterSeconds: 0,
      }),
    );
    return {
      allowed: open,
      reason: open ? 'store_unavailable_open' : 'store_unavailable',
      cost,
      retryAfterSeconds: open ? 0 : Math.max(1, Math.ceil(this.options.probeIntervalMs / 1000)),
      delayMs: 0,
      outcomes,
      violated: NO_OUTCOMES,
    };
  }

  #fallbackRefund(checks: readonly Check[], cost: number): void {
    if (this.#local !== undefined && !this.#closed)
      this.#local.refund(
        checks.map((c) => this.#localCheck(c)),
        cost,
      );
    else this.#n.droppedRefunds++;
  }

  #localCheck(c: Check): Check {
    const n = this.options.nodeCount;
    if (n === 1) return c;
    let p = this.#localPolicies.get(c.policy);
    if (p === undefined) {
      const src = c.policy;
      const share = (v: number) => Math.max(1, Math.floor(v / n));
      p = definePolicy({
        name: src.name,
        quota: share(src.quota),
        window: src.window,
        burst: share(src.burst),
        shadow: src.shadow,
        queue: src.queue && { limit: share(src.queue.limit), maxWaitMs: src.queue.maxWaitMs },
      });
      this.#localPolicies.set(src, p);
    }
    return { policy: p, key: c.key };
  }
}

function noop(): void {}

/** True when two entries can share a run of the script's arguments: everything but their keys is equal. */
function sameShape(a: Entry, b: Entry): boolean {
  if (a.op !== b.op || a.cost !== b.cost || a.now !== b.now) return false;
  const n = a.checks.length;
  if (b.checks.length !== n) return false;
  for (let i = 0; i < n; i++) if (a.checks[i].policy !== b.checks[i].policy) return false;
  return true;
}
