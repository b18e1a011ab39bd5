import {
  EMPTY_OVERRIDES,
  ErrorCode,
  integerOption,
  invalidOption,
  keepsOverride,
  OVERRIDE_HISTORY_LIMIT,
  type OverrideChange,
  type OverrideRule,
  type OverrideSnapshot,
  type OverrideStore,
  type OverrideWriteOptions,
  readStoredOverride,
  SluiceError,
} from '../core/index.js';
import { AUTOMATIC_HISTORY_LIMIT } from '../core/override.js';
import { mapSnapshot, type OverrideDelta, OverrideLog } from '../core/override-log.js';
import { mergeHistories } from '../core/override-writes.js';
import { lock, unlock } from './group-lock.js';
import {
  encodeRecord,
  H_LIVE,
  H_LOCK,
  H_VERSION,
  journalBytes,
  OverrideJournal,
  recordBytes,
} from './override-journal.js';

/**
 * Default room of the journal: 100,000 rules (a rule takes about 300 bytes with its record) fill less than half of
 * it, so a compaction (a pass over every rule) comes at most once per tens of thousands of writes. Pages never
 * written are not resident on Linux: a buffer holding few rules costs little.
 */
export const DEFAULT_OVERRIDE_BYTES = 64 * 1024 * 1024;

/** Expired rules are dropped on a write at most this often: a pass over every rule, paid once a second. */
const PRUNE_EVERY_MS = 1000;

/**
 * The share of the journal the rules and histories may take before a new rule is refused: the rest stays free for
 * appends, so a compaction (a pass over every rule) comes at most once per quarter of the buffer written, never
 * on every write of a buffer near its room.
 */
const LIVE_SHARE = 0.75;

/**
 * One record of the journal: a rule set (`s`), ids removed (`x`), an operator's change (`h`) or an automatic one
 * (`a`). A write is one record; a compaction writes one per rule and per change kept.
 */
interface JournalRecord {
  readonly s?: unknown;
  readonly x?: readonly string[];
  readonly h?: OverrideChange;
  readonly a?: OverrideChange;
}

/**
 * Overrides in a `SharedArrayBuffer`, for the worker threads of one process beside a `SharedStore`: a change
 * made by any thread is seen by every thread at its next decision (a decision reads one Atomics word; a thread
 * reads the buffer again only after a change). Create it in one thread and hand its `buffer` to the others.
 *
 * A write costs its own rule, whatever the number of rules: the buffer holds a journal of writes (the rule set or
 * removed, the change for the history), each thread keeps the rules by id and reads only the records appended
 * since it last looked, and limiters bring their indexes up to date from the changes (`changesSince`), as with
 * the memory and Redis stores. When the journal is full it is written again holding only the rules in force and
 * the histories kept (one pass over every rule, then every thread reads it whole once); a write that does not fit
 * even then is refused with `ERR_OVERRIDES_FULL`, nothing changed.
 *
 * @example
 * ```ts
 * const overrides = new SharedOverrides();
 * new Worker(url, { workerData: { overrides: overrides.buffer } }); // there: new SharedOverrides({ buffer })
 * ```
 */
export class SharedOverrides implements OverrideStore {
  readonly kind = 'shared';
  /** The buffer, to pass to other threads. */
  readonly buffer: SharedArrayBuffer;
  readonly #journal: OverrideJournal;
  readonly #now: () => number;
  #snapshot = EMPTY_OVERRIDES;
  /** This thread's copy of the rules, by id, in the order they were set. */
  #rules = new Map<string, OverrideRule>();
  #history: OverrideChange[] = [];
  /** Changes written as automatic (penalty blocks), kept apart so that they never push out an operator's. */
  #automatic: OverrideChange[] = [];
  /** The journal generation and offset this thread has read up to; -1 before its first read. */
  #generation = -1;
  #offset = 0;
  #log = new OverrideLog(0);
  #pruneAt = 0;

  /**
   * @param options - `buffer`: another instance's buffer to attach to; `bytes`: the room of a new buffer
   * (default {@link DEFAULT_OVERRIDE_BYTES}); `wallClock`: epoch milliseconds for pruning (default `Date.now`).
   * @throws SluiceError `ERR_INVALID_OPTION` for a buffer that is not an overrides buffer or a bad size.
   */
  constructor(
    options: {
      readonly buffer?: SharedArrayBuffer;
      readonly bytes?: number;
      readonly wallClock?: () => number;
    } = {},
  ) {
    this.#now = options.wallClock ?? Date.now;
    if (options.buffer === undefined) {
      const bytes = integerOption('bytes', options.bytes, 1024, 2 ** 30, DEFAULT_OVERRIDE_BYTES);
      this.#journal = OverrideJournal.allocate(bytes);
    } else {
      const b = options.buffer;
      const journal = b instanceof SharedArrayBuffer ? OverrideJournal.attach(b) : undefined;
      if (journal === undefined) {
        throw invalidOption(
          'buffer',
          'the buffer of a SharedOverrides',
          b instanceof SharedArrayBuffer ? 'another SharedArrayBuffer' : b,
        );
      }
      this.#journal = journal;
    }
    this.buffer = this.#journal.buffer;
  }

  snapshot(): OverrideSnapshot {
    const header = this.#journal.header;
    if (Atomics.load(header, H_VERSION) === this.#snapshot.version) return this.#snapshot;
    lock(header, H_LOCK);
    try {
      this.#sync();
    } finally {
      unlock(header, H_LOCK);
    }
    return this.#snapshot;
  }

  async set(rule: OverrideRule, change: OverrideChange, options?: OverrideWriteOptions): Promise<boolean> {
    const automatic = options?.automatic === true;
    // The check and the write under one lock: no thread's operator rule can land between them.
    return this.#locked(() => {
      const now = this.#now();
      const existing = this.#rules.get(rule.id);
      if (automatic && keepsOverride(existing, rule, now)) return false;
      const expired: string[] = [];
      let live = this.#kept(automatic ? 'a' : 'h', change) + recordBytes({ s: rule });
      if (existing !== undefined) live -= recordBytes({ s: existing });
      if (now >= this.#pruneAt) {
        this.#pruneAt = now + PRUNE_EVERY_MS;
        for (const [id, r] of this.#rules)
          if (r.expiresAt !== undefined && r.expiresAt <= now && id !== rule.id) {
            expired.push(id);
            live -= recordBytes({ s: r });
          }
      }
      const room = Math.floor(this.#journal.capacity * LIVE_SHARE);
      if (existing === undefined && live > room) {
        throw new SluiceError(
          ErrorCode.OverridesFull,
          `the rules in force and the history would take ${live} bytes, more than ${room} of the ${this.#journal.capacity} of the shared buffer (the rest is kept for writes); remove rules or give a larger bytes option`,
          { limit: room, needed: live },
        );
      }
      this.#commit(
        {
          s: rule,
          ...(expired.length === 0 ? {} : { x: expired }),
          ...(automatic ? { a: change } : { h: change }),
        },
        now,
        live,
      );
      return true;
    });
  }

  async remove(id: string, change: OverrideChange): Promise<OverrideRule | undefined> {
    return this.#locked(() => {
      const gone = this.#rules.get(id);
      if (gone === undefined) return undefined;
      const h = { ...change, rule: gone };
      this.#commit({ x: [id], h }, this.#now(), this.#kept('h', h) - recordBytes({ s: gone }));
      return gone;
    });
  }

  async history(): Promise<readonly OverrideChange[]> {
    return this.#locked(() =>
      mergeHistories(
        this.#history.slice(-OVERRIDE_HISTORY_LIMIT),
        this.#automatic.slice(-AUTOMATIC_HISTORY_LIMIT),
      ),
    );
  }

  refresh(): void {}

  close(): void {}

  /** Runs `f` under the writers' lock, this thread's copy brought up to date first. */
  #locked<T>(f: () => T): T {
    const header = this.#journal.header;
    lock(header, H_LOCK);
    try {
      this.#sync();
      return f();
    } finally {
      unlock(header, H_LOCK);
    }
  }

  /**
   * The bytes a compaction would write once `change` joins its history (`h` or `a`), the oldest kept change
   * falling out when the history is full.
   */
  #kept(kind: 'h' | 'a', change: OverrideChange): number {
    const changes = kind === 'h' ? this.#history : this.#automatic;
    const limit = kind === 'h' ? OVERRIDE_HISTORY_LIMIT : AUTOMATIC_HISTORY_LIMIT;
    let live = Atomics.load(this.#journal.header, H_LIVE) + recordBytes({ [kind]: change });
    if (changes.length >= limit) live -= recordBytes({ [kind]: changes[changes.length - limit] });
    return live;
  }

  /**
   * Appends one write's record; when the journal is full, writes it again with the rules in force and the
   * histories kept, then the record. Under the lock, with this thread's copy current.
   *
   * @param live - the bytes a compaction would write after this write.
   * @throws SluiceError `ERR_OVERRIDES_FULL` when even that does not fit (nothing is written then).
   */
  #commit(record: JournalRecord, now: number, live: number): void {
    const journal = this.#journal;
    const bytes = encodeRecord(record);
    if (!journal.append([bytes])) {
      const gone = new Set(record.x);
      // The rule being set goes at the end, with its record.
      if (record.s !== undefined) gone.add((record.s as OverrideRule).id);
      const image: Uint8Array[] = [];
      for (const [id, r] of this.#rules) {
        if ((r.expiresAt === undefined || r.expiresAt > now) && !gone.has(id))
          image.push(encodeRecord({ s: r }));
      }
      for (const h of this.#history.slice(-OVERRIDE_HISTORY_LIMIT)) image.push(encodeRecord({ h }));
      for (const a of this.#automatic.slice(-AUTOMATIC_HISTORY_LIMIT)) image.push(encodeRecord({ a }));
      // Exact again after a compaction (expired rules no longer counted): the image, this write's record as the
      // compacted rule and change it leaves.
      live = journalBytes(image) + (record.s === undefined ? 0 : recordBytes({ s: record.s }));
      if (record.h !== undefined) live += this.#kept('h', record.h) - Atomics.load(journal.header, H_LIVE);
      if (record.a !== undefined) live += this.#kept('a', record.a) - Atomics.load(journal.header, H_LIVE);
      image.push(bytes);
      if (!journal.replace(image)) {
        const needed = journalBytes(image);
        throw new SluiceError(
          ErrorCode.OverridesFull,
          `the overrides take ${needed} bytes, more than the ${journal.capacity} of the shared buffer; remove rules or give a larger bytes option`,
          { limit: journal.capacity, needed },
        );
      }
    }
    Atomics.store(journal.header, H_LIVE, live);
    Atomics.add(journal.header, H_VERSION, 1);
    // This thread reads its own record back like any other thread: one way to change the copy.
    this.#sync();
  }

  /** Reads the records appended since this thread last looked (all of them after a compaction). Under the lock. */
  #sync(): void {
    const journal = this.#journal;
    const generation = journal.generation;
    const end = journal.end;
    const version = Atomics.load(journal.header, H_VERSION);
    if (generation === this.#generation && end === this.#offset && version === this.#snapshot.version) return;
    let deltas: OverrideDelta[] | undefined = [];
    if (generation !== this.#generation) {
      // Written again from the start: read whole, and limiters rebuild their indexes once. A journal never
      // compacted holds every change from the empty snapshot on, so a first read gives them as changes.
      if (this.#generation !== -1 || generation !== 0) deltas = undefined;
      this.#rules = new Map();
      this.#history = [];
      this.#automatic = [];
      this.#generation = generation;
      this.#offset = 0;
    }
    journal.read(this.#offset, end, (r) => this.#apply(r as JournalRecord, deltas));
    this.#offset = end;
    this.#publish(version, deltas);
  }

  #apply(record: JournalRecord, deltas: OverrideDelta[] | undefined): void {
    const rules = this.#rules;
    if (record.x !== undefined) {
      for (const id of record.x) if (rules.delete(id)) deltas?.push({ id, rule: undefined });
    }
    if (record.s !== undefined) {
      const rule = readStoredOverride(record.s);
      const id = (record.s as { id?: unknown }).id;
      if (typeof id === 'string') {
        // Set again, a rule moves to the end, as the memory store orders them; one that does not read is not applied.
        rules.delete(id);
        if (rule !== undefined) rules.set(id, rule);
        deltas?.push({ id, rule });
      }
    }
    if (record.h !== undefined) keep(this.#history, record.h, OVERRIDE_HISTORY_LIMIT);
    if (record.a !== undefined) keep(this.#automatic, record.a, AUTOMATIC_HISTORY_LIMIT);
  }

  #publish(version: number, deltas: readonly OverrideDelta[] | undefined): void {
    const log = this.#log;
    // Without deltas (read whole), a jump: the log starts again at this version.
    log.record(version, deltas ?? [], deltas === undefined ? -1 : this.#snapshot.version);
    this.#snapshot = mapSnapshot(version, this.#rules, log);
  }
}

/** Appends a change, trimming in halves so that the copy is paid once per `limit` changes, not per change. */
function keep(changes: OverrideChange[], change: OverrideChange, limit: number): void {
  changes.push(change);
  if (changes.length > limit * 2) changes.splice(0, changes.length - limit);
}
