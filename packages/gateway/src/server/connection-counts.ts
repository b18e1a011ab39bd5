import { createHash, randomFillSync } from 'node:crypto';

/** The caps one connection is checked against; `0` is no cap. */
export interface ConnectionCaps {
  /** Connections open at once over the whole table. */
  readonly total: number;
  /** Connections open at once of one client. */
  readonly perClient: number;
}

/** Which cap refused a connection: the metric's `reason` label. */
export type ConnectionRefusal = 'total' | 'client';

/** Gives a taken slot back; calling it again does nothing. */
export type ReleaseSlot = () => void;

/** Counters per row of the per-client table: a power of two, for the index mask. */
const SLOTS = 1 << 16;
/** Words before the rows: the total at 0, then the 32-byte hash seed. */
const HEADER = 16;
const SEED_AT = 1;
const SEED_WORDS = 8;
const WORDS = HEADER + 2 * SLOTS;

/**
 * The connections open on the proxy listeners of one process: a total and a count per client, in a
 * `SharedArrayBuffer` so that the threads of `sluice serve --threads` share them (file descriptors are the
 * process's, so the cap is too), updated with `Atomics` so that two threads never both take the last slot.
 *
 * Clients are counted in a count-min table: two rows of 65,536 counters, each client adding to one counter per
 * row chosen by a hash keyed with a random seed, and its count read as the smaller of the two. A count can only be
 * too high (two clients sharing both counters), never too low, so the cap never lets a client hold more than it
 * says; with the seed secret a client cannot choose whose counters it shares. The table is fixed in size (512
 * KiB) whatever the number of addresses, so a flood of addresses cannot grow it.
 */
export class ConnectionCounts {
  /** The shared memory: hand it to another thread and open it there with {@link ConnectionCounts.on}. */
  readonly buffer: SharedArrayBuffer;
  readonly #words: Int32Array;
  readonly #seed: Buffer;

  private constructor(buffer: SharedArrayBuffer) {
    this.buffer = buffer;
    this.#words = new Int32Array(buffer);
    this.#seed = Buffer.from(Buffer.from(buffer, SEED_AT * 4, SEED_WORDS * 4));
  }

  /** A new table, with a new random seed and nothing open. */
  static create(): ConnectionCounts {
    const buffer = new SharedArrayBuffer(WORDS * 4);
    randomFillSync(new Int32Array(buffer, SEED_AT * 4, SEED_WORDS));
    return new ConnectionCounts(buffer);
  }

  /**
   * The table in `buffer`, made by {@link ConnectionCounts.create} (in another thread).
   *
   * @throws RangeError when the buffer is not the size of a table.
   */
  static on(buffer: SharedArrayBuffer): ConnectionCounts {
    if (buffer.byteLength !== WORDS * 4) {
      throw new RangeError(`a connection table is ${WORDS * 4} bytes, got ${buffer.byteLength}`);
    }
    return new ConnectionCounts(buffer);
  }

  /** Connections open now, over every thread. */
  get open(): number {
    return Atomics.load(this.#words, 0);
  }

  /**
   * Takes a slot for a new connection, unless a cap is reached.
   *
   * @param client - the client's key (for example `ip:192.0.2.1`, an IPv6 client by its /64), or `undefined` for
   * a connection counted in the total only (a trusted proxy's).
   * @param caps - the caps in force.
   * @returns the function that gives the slot back when the connection closes, or the cap that refused it (a
   * refused connection takes nothing).
   */
  take(client: string | undefined, caps: ConnectionCaps): ReleaseSlot | ConnectionRefusal {
    const w = this.#words;
    // Add first, then check what was there before: two threads racing for the last slot cannot both see room.
    if (Atomics.add(w, 0, 1) >= caps.total && caps.total > 0) {
      Atomics.sub(w, 0, 1);
      return 'total';
    }
    // Counted even without a cap per client, so that a reload that sets one finds the counts right.
    const slots = client === undefined ? undefined : this.#slotsOf(client);
    if (slots !== undefined) {
      const a = Atomics.add(w, slots[0], 1);
      const b = Atomics.add(w, slots[1], 1);
      if (caps.perClient > 0 && Math.min(a, b) >= caps.perClient) {
        this.#release(slots);
        return 'client';
      }
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#release(slots);
    };
  }

  #release(slots: readonly [number, number] | undefined): void {
    const w = this.#words;
    Atomics.sub(w, 0, 1);
    if (slots === undefined) return;
    Atomics.sub(w, slots[0], 1);
    Atomics.sub(w, slots[1], 1);
  }

  /** The client's counter in each row. */
  #slotsOf(client: string): [number, number] {
    const h = createHash('sha256').update(this.#seed).update(client).digest();
    return [HEADER + (h.readUInt32LE(0) & (SLOTS - 1)), HEADER + SLOTS + (h.readUInt32LE(4) & (SLOTS - 1))];
  }
}
