import {
  AUTOMATIC_HISTORY_LIMIT,
  EMPTY_OVERRIDES,
  ErrorCode,
  integerOption,
  invalidOption,
  OVERRIDE_HISTORY_LIMIT,
  type OverrideChange,
  type OverrideRule,
  type OverrideSnapshot,
  type OverrideStore,
  type OverrideWriteOptions,
  readStoredOverride,
  SluiceError,
} from '../core/index.js';
import { OverrideLog } from '../core/override-log.js';
import { mergeHistories } from '../core/override-writes.js';
import { type RedisScriptClient, toScriptClient } from './client-adapter.js';
import { logWrite, READ_CHANGES, readChanges } from './override-change-log.js';

/** The current version, and the rules only when it differs from the one the caller holds. */

/**
 * Sets a rule, drops the expired ids the caller names, bumps the version and appends the change. An automatic
 * rule (ARGV[5] its author, ARGV[6] the time) leaves a rule of another author still in force in place (the same
 * test as `keepsOverride`, in the same step as the write) and goes to the automatic history (KEYS[4]).
 */
const SET = `if ARGV[5] ~= '' then
  local old = redis.call('HGET', KEYS[2], ARGV[1])
  if old then
    local ok, r = pcall(cjson.decode, old)
    if ok and type(r) == 'table' and r.author ~= ARGV[5]
      and (type(r.expiresAt) ~= 'number' or r.expiresAt > tonumber(ARGV[6])) then return false end
  end
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
for i = 7, #ARGV do redis.call('HDEL', KEYS[2], ARGV[i]) end
local v = redis.call('INCR', KEYS[1])
${logWrite(1, 7)}
local h = KEYS[3]
if ARGV[5] ~= '' then h = KEYS[4] end
redis.call('RPUSH', h, ARGV[3])
redis.call('LTRIM', h, -tonumber(ARGV[4]), -1)
return v`;

/** Both histories: the operators' and the automatic one. */
const HISTORY = `return {redis.call('LRANGE', KEYS[3], 0, -1), redis.call('LRANGE', KEYS[4], 0, -1)}`;

/** Removes a rule when present; the change records the rule as it was (spliced between ARGV[2] and ARGV[3]). */
const REMOVE = `local old = redis.call('HGET', KEYS[2], ARGV[1])
if not old then return false end
redis.call('HDEL', KEYS[2], ARGV[1])
local v = redis.call('INCR', KEYS[1])
${logWrite(1, 0)}
redis.call('RPUSH', KEYS[3], ARGV[2] .. old .. ARGV[3])
redis.call('LTRIM', KEYS[3], -tonumber(ARGV[4]), -1)
return old`;

/** Expired rules are dropped with a write at most this often (see `#expired`). */
const PRUNE_EVERY_MS = 1000;

/** Options of {@link RedisOverrides}. */
export interface RedisOverridesOptions {
  /** The connection (what `RedisStore` takes: ioredis, node-redis or a `RedisScriptClient`). */
  readonly client: unknown;
  /** Key prefix, without braces; default `rl:`. */
  readonly prefix?: string;
  /**
   * Milliseconds between version checks; every gateway applies a change within this plus one round trip.
   * Integer from 50 to 1,000; default 250.
   */
  readonly refreshMs?: number;
  /** Epoch milliseconds, for pruning expired rules on write; default `Date.now`. */
  readonly wallClock?: () => number;
}

/**
 * Overrides in Redis, shared by every gateway on it: a hash of rules (`<prefix>{overrides}:rules`), a version
 * number and a list of the last changes, all under one hash tag so a Cluster keeps them in one slot. Each
 * gateway caches the rules and checks the version every `refreshMs` (one small script call per gateway, never
 * one per decision), reading the hash again only when the version moved. A check that fails keeps the rules it
 * had, so an outage never drops an override or a block.
 */
export class RedisOverrides implements OverrideStore {
  readonly kind = 'redis';
  readonly #client: RedisScriptClient;
  readonly #keys: string[];
  readonly #now: () => number;
  readonly #timer: ReturnType<typeof setInterval>;
  /** Stops reading at each new connection. */
  readonly #offConnect: (() => void) | undefined;
  #snapshot = EMPTY_OVERRIDES;
  /** The rules of the snapshot by id, updated from Redis's change log (see `override-change-log.ts`). */
  readonly #byId = new Map<string, OverrideRule>();
  #epoch = '';
  #pruneAt = 0;
  /** The changes read, for the limiters' indexes. */
  readonly #log = new OverrideLog(0);
  #refreshing: Promise<void> | undefined;
  #loaded = false;

  /** @throws SluiceError `ERR_INVALID_OPTION` for a bad client, prefix or interval. */
  constructor(options: RedisOverridesOptions) {
    this.#client = toScriptClient(options.client);
    const prefix = options.prefix ?? 'rl:';
    if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
      throw invalidOption('prefix', 'a string without { or }', prefix);
    }
    const refreshMs = integerOption('refreshMs', options.refreshMs, 50, 1000, 250);
    this.#now = options.wallClock ?? Date.now;
    const base = `${prefix}{overrides}:`;
    this.#keys = [
      `${base}version`,
      `${base}rules`,
      `${base}history`,
      `${base}automatic-history`,
      `${base}changes`,
      `${base}epoch`,
    ];
    this.#timer = setInterval(() => void this.refresh(), refreshMs);
    this.#timer.unref?.();
    void this.refresh();
    // A connection that opens (again) reads the rules at once: a gateway whose Redis comes back knows and applies
    // its blocks from then on, not up to `refreshMs` later (D-G77).
    this.#offConnect = this.#client.onConnect?.(() => void this.refresh());
  }

  snapshot(): OverrideSnapshot {
    return this.#snapshot;
  }

  /**
   * False until the rules were read from Redis once: before that the snapshot is empty because nothing was
   * read, not because no rule exists (a gateway started while Redis is down).
   */
  get loaded(): boolean {
    return this.#loaded;
  }

  /** Reads the version now, and the rules when it moved; resolves once done (errors keep the old rules). */
  refresh(): Promise<void> {
    this.#refreshing ??= this.#read().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async set(rule: OverrideRule, change: OverrideChange, options?: OverrideWriteOptions): Promise<boolean> {
    const now = this.#now();
    const automatic = options?.automatic === true;
    const expired = this.#expired(now, rule.id);
    const written = await this.#call(SET, [
      rule.id,
      JSON.stringify(rule),
      JSON.stringify(change),
      String(automatic ? AUTOMATIC_HISTORY_LIMIT : OVERRIDE_HISTORY_LIMIT),
      automatic ? rule.author : '',
      String(now),
      ...expired,
    ]);
    if (written === null || written === undefined || written === false) return false;
    await this.#readAfterWrite();
    return true;
  }

  async remove(id: string, change: OverrideChange): Promise<OverrideRule | undefined> {
    const text = JSON.stringify(change);
    const old = await this.#call(REMOVE, [
      id,
      `${text.slice(0, -1)},"rule":`,
      '}',
      String(OVERRIDE_HISTORY_LIMIT),
    ]);
    await this.#readAfterWrite();
    return typeof old === 'string' ? readStoredOverride(safeParse(old)) : undefined;
  }

  async history(): Promise<readonly OverrideChange[]> {
    const lists = await this.#call(HISTORY, []);
    if (!Array.isArray(lists)) return [];
    const read = (list: unknown) =>
      Array.isArray(list)
        ? list.map((s) => safeParse(String(s)) as OverrideChange).filter((c) => c !== undefined)
        : [];
    return mergeHistories(read(lists[0]), read(lists[1]));
  }

  close(): void {
    clearInterval(this.#timer);
    this.#offConnect?.();
  }

  /** A read that starts after the write: one in flight may have started before it. */
  async #readAfterWrite(): Promise<void> {
    await this.#refreshing;
    await this.refresh();
  }

  async #read(): Promise<void> {
    let reply: unknown;
    try {
      const held = this.#snapshot.version;
      reply = await this.#client.eval(READ_CHANGES, this.#keys, [String(held), this.#epoch]);
    } catch {
      return;
    }
    const read = readChanges(reply);
    if (read === undefined) return;
    // Read once: the version is the one held, or the rules were read, so the rules held are Redis's.
    this.#loaded = true;
    if (read.kind === 'same') return;
    const from = this.#snapshot.version;
    const byId = this.#byId;
    if (read.kind === 'delta') {
      // Only the rules changed since the version held: a write to 100,000 rules reads one rule, not all of them.
      for (const d of read.deltas) {
        if (d.rule === undefined) byId.delete(d.id);
        else byId.set(d.id, d.rule);
      }
      this.#log.record(read.version, read.deltas, from);
    } else {
      byId.clear();
      for (const r of read.rules) byId.set(r.id, r);
      this.#log.record(read.version, [], Number.NaN);
    }
    this.#epoch = read.epoch;
    // Reads never overlap (refresh() shares the one in flight), so any other version is the newer state, a lower
    // one included (a Redis restarted from an older snapshot).
    const version = read.version;
    const log = this.#log;
    let list: readonly OverrideRule[] | undefined;
    // The list is built on first read and kept: a read of one changed rule copies nothing. A snapshot read for the
    // first time after a later read shows the rules of then (newer ones, never older).
    this.#snapshot = Object.freeze({
      version,
      get rules(): readonly OverrideRule[] {
        list ??= Object.freeze([...byId.values()]);
        return list;
      },
      changesSince: (v: number) => log.since(v, version),
      ruleOf: (id: string) => byId.get(id),
    });
  }

  /**
   * The ids of expired rules a write drops with it, looked for at most once a second: a pass over every rule,
   * not one per write.
   */
  #expired(now: number, except: string): string[] {
    if (now < this.#pruneAt) return [];
    this.#pruneAt = now + PRUNE_EVERY_MS;
    const out: string[] = [];
    for (const [id, r] of this.#byId) {
      if (r.expiresAt !== undefined && r.expiresAt <= now && id !== except) out.push(id);
    }
    return out;
  }

  async #call(script: string, args: string[]): Promise<unknown> {
    try {
      return await this.#client.eval(script, this.#keys, args);
    } catch (e) {
      throw new SluiceError(
        ErrorCode.StoreUnavailable,
        `the overrides in Redis could not be written or read: ${(e as Error).message}`,
        {},
        { cause: e },
      );
    }
  }
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
