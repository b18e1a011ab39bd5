import { keyAsPattern } from 'sluice';
import type { PenaltyConfig } from '../config/gateway-config.js';
import type { Logger } from '../log/create-logger.js';
import type { OverrideControl } from './override-control.js';

/** One key's record: its denials in the current window and its last block. */
interface PenaltyState {
  count: number;
  windowStart: number;
  /** Doublings of the last block (0 for the first). */
  level: number;
  /** When the last block ends (epoch ms), or -Infinity before the first. */
  blockedUntil: number;
}

/** Who penalty blocks are set by, in listings and the audit log. */
const PENALTY_AUTHOR = 'penalty';

/** Keys remembered at most; a flood of distinct keys clears the table rather than growing it. */
const MAX_KEYS = 100_000;

/**
 * Penalty blocks one gateway process keeps in force at most. Every rule change rebuilds the rules' index (and,
 * across threads, rewrites the shared copy): a flood of distinct keys, each limited a few times (an IPv6 /48
 * holds 65,536 /64 keys), would otherwise add rules without end, each change slower than the last. Past the cap
 * a key is still limited by its buckets; it just gets no block until earlier ones end.
 */
export const MAX_PENALTY_BLOCKS = 1_000;

/** What a penalty block reports (a metric and a log line). */
export interface PenaltyBlock {
  readonly key: string;
  readonly durationMs: number;
  /** Doublings of the base block: 0, 1, 2, ... */
  readonly level: number;
  readonly status: 403 | 429;
}

/**
 * Automatic blocks (`penalty:`): a key denied `after` times within `within` is blocked for `block`, through the
 * same store as the operators' blocks (so every gateway and thread applies it). A key blocked again before
 * `forgetAfter` has passed since its last block ended gets twice the previous block, up to `maxBlock`; after
 * that quiet time it starts again at `block`. Denials are counted per gateway process or thread (no store call
 * per denial); the block itself is shared.
 */
export class Penalties {
  readonly #state = new Map<string, PenaltyState>();
  readonly #control: OverrideControl;
  readonly #config: () => PenaltyConfig | undefined;
  readonly #now: () => number;
  readonly #logger: Logger;
  readonly #onBlock: (b: PenaltyBlock) => void;
  readonly #onFull: (key: string) => void;
  /** This process's penalty blocks in force: key to the end of its block (epoch ms). */
  readonly #active = new Map<string, number>();

  /**
   * @param control - where blocks are set (author `penalty`).
   * @param config - the `penalty:` section in force (read per denial, so a reload applies).
   * @param now - epoch milliseconds.
   * @param logger - where failures to set a block go.
   * @param onBlock - told of every block set (the metric and the log line).
   * @param onFull - told of a block not set because {@link MAX_PENALTY_BLOCKS} are in force.
   */
  constructor(
    control: OverrideControl,
    config: () => PenaltyConfig | undefined,
    now: () => number,
    logger: Logger,
    onBlock: (b: PenaltyBlock) => void,
    onFull: (key: string) => void = () => undefined,
  ) {
    this.#control = control;
    this.#config = config;
    this.#now = now;
    this.#logger = logger;
    this.#onBlock = onBlock;
    this.#onFull = onFull;
  }

  /** Penalty blocks set by this process and still in force. */
  get active(): number {
    this.#prune(this.#now());
    return this.#active.size;
  }

  /**
   * Counts one denial (`rate_limited`) of a key; sets a block when it is the `after`-th within the window.
   *
   * @returns the block set, or `undefined`.
   */
  limited(key: string): PenaltyBlock | undefined {
    const c = this.#config();
    if (c === undefined || key === '') return undefined;
    const now = this.#now();
    let s = this.#state.get(key);
    if (s === undefined) {
      if (this.#state.size >= MAX_KEYS) this.#forget(now, c);
      s = { count: 0, windowStart: now, level: 0, blockedUntil: Number.NEGATIVE_INFINITY };
      this.#state.set(key, s);
    }
    // Denials that raced the block on its way to this gateway do not count toward the next one.
    if (now < s.blockedUntil) return undefined;
    if (now - s.windowStart >= c.withinMs) {
      s.count = 0;
      s.windowStart = now;
    }
    s.count++;
    if (s.count < c.after) return undefined;
    // Written as a pattern naming that key only: a key's spaces, controls, non-ASCII characters and `*` escaped.
    const pattern = keyAsPattern(key) ?? key;
    // An operator's rule on the key (a block, a limit) stays as the operator set it: no penalty over it.
    if (this.#control.heldByOther(pattern, PENALTY_AUTHOR)) {
      s.count = 0;
      return undefined;
    }
    if (!this.#active.has(key) && this.#active.size >= MAX_PENALTY_BLOCKS) {
      this.#prune(now);
      if (this.#active.size >= MAX_PENALTY_BLOCKS) {
        s.count = 0;
        this.#onFull(key);
        return undefined;
      }
    }
    const before = { level: s.level, blockedUntil: s.blockedUntil };
    const repeat = s.blockedUntil !== Number.NEGATIVE_INFINITY && now - s.blockedUntil < c.forgetAfterMs;
    s.level = repeat ? s.level + 1 : 0;
    const durationMs = Math.min(c.blockMs * 2 ** Math.min(s.level, 40), c.maxBlockMs);
    s.blockedUntil = now + durationMs;
    s.count = 0;
    this.#active.set(key, s.blockedUntil);
    const block: PenaltyBlock = { key, durationMs, level: s.level, status: c.status };
    // The rule's author is `penalty`; listings show it beside the reason.
    const reason = `limited ${c.after} times within ${c.withinMs / 1000}s (block ${s.level + 1} in a row)`;
    this.#control
      .setAutomatic(
        { pattern, block: c.status, ttlSeconds: Math.ceil(durationMs / 1000), reason },
        PENALTY_AUTHOR,
      )
      .then(
        (set) => {
          if (set !== undefined) {
            this.#onBlock(block);
            return;
          }
          // An operator's rule landed first (another gateway or thread): it stays, and this key had no block, so
          // none counts toward the next one's length.
          if (s.blockedUntil !== now + durationMs) return;
          s.level = before.level;
          s.blockedUntil = before.blockedUntil;
          this.#active.delete(key);
        },
        (e: unknown) => this.#logger.warn({ err: e, key }, 'penalty block could not be set'),
      );
    return block;
  }

  #prune(now: number): void {
    for (const [k, until] of this.#active) if (until <= now) this.#active.delete(k);
  }

  /** Drops keys whose window and block are both over; all of them when that frees nothing. */
  #forget(now: number, c: PenaltyConfig): void {
    for (const [k, s] of this.#state) {
      if (now - s.windowStart >= c.withinMs && now - s.blockedUntil >= c.forgetAfterMs) this.#state.delete(k);
    }
    if (this.#state.size >= MAX_KEYS) this.#state.clear();
  }
}
