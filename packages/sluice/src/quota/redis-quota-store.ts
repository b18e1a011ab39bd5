import { createHash } from 'node:crypto';
import {
  ErrorCode,
  invalidOption,
  objectOption,
  rejectUnknownKeys,
  SluiceError,
  stringOption,
} from '../core/index.js';
import type { BucketCounts, QuotaStore } from './quota-store.js';

/**
 * The part of an ioredis client (`Redis` or `Cluster`) the quota store uses. Both answer `pipeline(commands)`
 * and `call(...)`; a Cluster sets `isCluster`, and then commands go out one by one (ioredis still writes them
 * without waiting for each other) because a pipeline must stay within one slot.
 */
export interface QuotaRedisClient {
  pipeline(commands: (string | number)[][]): { exec(): Promise<[Error | null, unknown][] | null> };
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  readonly isCluster?: boolean;
}

/** Options of {@link RedisQuotaStore}. */
export interface RedisQuotaStoreOptions {
  /** An ioredis `Redis` or `Cluster`; the store never closes it (you own it). */
  readonly client: QuotaRedisClient;
  /** Prefix of every key, as in the contract's `key_prefix`. Default `sluice:quota:`. */
  readonly keyPrefix?: string;
}

/**
 * Adds the counts of one tenant into one bucket of its window and returns the tenant's usage over the window, in
 * one round trip. KEYS are the window's bucket keys of the tenant, oldest first. ARGV[1] is the index (1-based) of
 * the bucket to write, 0 to only read; ARGV[2] the Unix time the written bucket expires; then category, count pairs.
 * The keys of a tenant share its hash tag, so the script stays within one slot on a Redis Cluster.
 */
const ADD_SCRIPT = `
local target = tonumber(ARGV[1])
if target > 0 then
  local key = KEYS[target]
  for i = 3, #ARGV, 2 do
    redis.call('HINCRBY', key, ARGV[i], ARGV[i + 1])
  end
  redis.call('EXPIREAT', key, ARGV[2])
end
local total = 0
for i = 1, #KEYS do
  local values = redis.call('HVALS', KEYS[i])
  for j = 1, #values do total = total + tonumber(values[j]) end
end
return total
`;

const ADD_SHA = createHash('sha1').update(ADD_SCRIPT).digest('hex');

type Command = (string | number)[];

/**
 * Quota usage in Redis or Valkey, shared by every process of a fleet, keyed as the contract shows
 * (`key_prefix` then tenant and time bucket, a hash of endpoint category to count, with a TTL):
 *
 * - `<prefix>{<tenant>}:<bucket>`: hash category -> count; expires when the bucket leaves every window.
 * - `<prefix>top:{top}:<bucket>`: sorted set tenant -> count, for the top tenants.
 * - `<prefix>alert:{<tenant>}:<threshold>`: the claim that makes an alert fire once across the fleet.
 *
 * One flush is one pipeline: per tenant a script call (increments plus the window total) and a ZINCRBY.
 *
 * @example
 * ```ts
 * const store = new RedisQuotaStore({ client: new Redis(6379, '127.0.0.1'), keyPrefix: 'acme:quota:' });
 * ```
 */
export class RedisQuotaStore implements QuotaStore {
  readonly kind = 'redis';
  /** The key prefix in use. */
  readonly keyPrefix: string;
  readonly #client: QuotaRedisClient;

  /** @throws SluiceError `ERR_INVALID_OPTION` for a missing client or an invalid prefix. */
  constructor(options: RedisQuotaStoreOptions) {
    const o = objectOption('RedisQuotaStore options', options);
    rejectUnknownKeys('RedisQuotaStore options', o, ['client', 'keyPrefix']);
    const client = o.client as QuotaRedisClient | undefined;
    if (
      typeof client !== 'object' ||
      client === null ||
      typeof client.pipeline !== 'function' ||
      typeof client.call !== 'function'
    ) {
      throw invalidOption('client', 'an ioredis Redis or Cluster client', client);
    }
    this.#client = client;
    this.keyPrefix = stringOption('keyPrefix', o.keyPrefix, 'sluice:quota:');
  }

  /** The key of a tenant's bucket. */
  usageKey(tenant: string, bucket: number): string {
    return `${this.keyPrefix}{${tenant}}:${bucket}`;
  }

  /** The key of a bucket's top-tenants set. */
  topKey(bucket: number): string {
    return `${this.keyPrefix}top:{top}:${bucket}`;
  }

  /** The key of an alert claim. */
  alertKey(tenant: string, threshold: number): string {
    return `${this.keyPrefix}alert:{${tenant}}:${threshold}`;
  }

  async add(
    bucket: number,
    counts: BucketCounts,
    window: readonly number[],
    expireAt: number,
  ): Promise<Map<string, number>> {
    const target = window.indexOf(bucket) + 1;
    const commands: Command[] = [];
    const tenants: string[] = [];
    const top = this.topKey(bucket);
    for (const [tenant, categories] of counts) {
      const cmd: Command = ['evalsha', ADD_SHA, window.length];
      for (const b of window) cmd.push(this.usageKey(tenant, b));
      cmd.push(target, expireAt);
      let sum = 0;
      if (target > 0) {
        for (const [category, n] of categories) {
          cmd.push(category, n);
          sum += n;
        }
      }
      commands.push(cmd);
      tenants.push(tenant);
      if (sum > 0) commands.push(['zincrby', top, sum, tenant]);
    }
    if (target > 0 && commands.length > tenants.length) commands.push(['expireat', top, expireAt]);
    const replies = await this.#run(commands);
    const out = new Map<string, number>();
    let t = 0;
    for (let i = 0; i < commands.length; i++) {
      if (commands[i][0] === 'evalsha') out.set(tenants[t++], Number(replies[i]));
    }
    return out;
  }

  async totals(tenants: readonly string[], window: readonly number[]): Promise<Map<string, number>> {
    const commands = tenants.map((tenant) => {
      const cmd: Command = ['evalsha', ADD_SHA, window.length];
      for (const b of window) cmd.push(this.usageKey(tenant, b));
      cmd.push(0, 0);
      return cmd;
    });
    const replies = await this.#run(commands);
    return new Map(tenants.map((t, i) => [t, Number(replies[i])]));
  }

  async usage(tenant: string, window: readonly number[]): Promise<Map<string, number>> {
    const replies = await this.#run(window.map((b) => ['hgetall', this.usageKey(tenant, b)]));
    const out = new Map<string, number>();
    for (const reply of replies) {
      const flat = toPairs(reply);
      for (const [category, n] of flat) out.set(category, (out.get(category) ?? 0) + n);
    }
    return out;
  }

  async top(window: readonly number[], n: number): Promise<[string, number][]> {
    const keys = window.map((b) => this.topKey(b));
    const reply = await this.#call('zunion', keys.length, ...keys, 'WITHSCORES');
    const pairs = toPairs(reply);
    return pairs.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, n);
  }

  async claimAlert(tenant: string, threshold: number, ttlSeconds: number): Promise<boolean> {
    const reply = await this.#call(
      'set',
      this.alertKey(tenant, threshold),
      '1',
      'EX',
      Math.max(1, ttlSeconds),
      'NX',
    );
    return reply === 'OK';
  }

  async releaseAlert(tenant: string, threshold: number): Promise<void> {
    await this.#call('del', this.alertKey(tenant, threshold));
  }

  async close(): Promise<void> {
    // The client belongs to the caller, who may share it with the rate limit store.
  }

  async #call(command: string, ...args: (string | number)[]): Promise<unknown> {
    try {
      return await this.#client.call(command, ...args);
    } catch (error) {
      throw unavailable(error);
    }
  }

  /** Runs commands in one pipeline (one by one on a Cluster), loading the script when Redis lost it. */
  async #run(commands: Command[]): Promise<unknown[]> {
    if (commands.length === 0) return [];
    const replies = await this.#send(commands);
    const missing: number[] = [];
    replies.forEach((r, i) => {
      if (r instanceof Error && /NOSCRIPT/.test(r.message)) missing.push(i);
    });
    if (missing.length > 0) {
      // Only the script calls are sent again, as EVAL (which also caches the script on the node that runs it, so
      // this works on every node of a Cluster): the other commands of the pipeline already ran.
      const again = await this.#send(missing.map((i) => ['eval', ADD_SCRIPT, ...commands[i].slice(2)]));
      missing.forEach((i, j) => {
        replies[i] = again[j];
      });
    }
    const failed = replies.find((r) => r instanceof Error);
    if (failed !== undefined) throw unavailable(failed);
    return replies;
  }

  async #send(commands: Command[]): Promise<unknown[]> {
    try {
      if (this.#client.isCluster === true) {
        return await Promise.all(
          commands.map(([name, ...args]) =>
            this.#client.call(String(name), ...args).catch((e: unknown) => toError(e)),
          ),
        );
      }
      const result = await this.#client.pipeline(commands).exec();
      if (result === null) throw new Error('the pipeline was discarded');
      return result.map(([error, value]) => error ?? value);
    } catch (error) {
      throw unavailable(error);
    }
  }
}

function toError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

function unavailable(cause: unknown): SluiceError {
  if (cause instanceof SluiceError) return cause;
  return new SluiceError(
    ErrorCode.StoreUnavailable,
    `the quota store could not answer: ${toError(cause).message}`,
    { store: 'redis' },
    { cause },
  );
}

/** Reads a flat [field, value, field, value] reply (HGETALL in RESP2, ZUNION WITHSCORES) or an object reply. */
function toPairs(reply: unknown): [string, number][] {
  if (Array.isArray(reply)) {
    const out: [string, number][] = [];
    for (let i = 0; i + 1 < reply.length; i += 2) out.push([String(reply[i]), Number(reply[i + 1])]);
    return out;
  }
  if (typeof reply === 'object' && reply !== null) {
    return Object.entries(reply as Record<string, unknown>).map(([k, v]) => [k, Number(v)]);
  }
  return [];
}
