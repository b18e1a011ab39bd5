import { ErrorCode, SluiceError } from '../core/index.js';

/*
 * The layout of the one SharedArrayBuffer that holds a shared bucket table (see docs/DECISIONS.md, "Shared
 * bucket table"). Every thread builds the same typed-array views over it:
 *
 *   header   Int32 x 16   magic, version, groups, maxTrackedKeys, maxPolicies, policyCount, policyLock,
 *                         sweeping, size, seed
 *   counters BigInt64 x 4 evictions, fullDropped, sweeps
 *   locks    Int32 x G    one futex word per group of 8 slots
 *   slots    Int32 x G*8*5  per slot: tag (policy index + 1, 0 = empty) and the key's 128-bit hash
 *   state    Float64 x G*8*2  per slot: units, last
 *   policies Int32 x P*4 (fingerprint hash), Float64 x P*8 (quota, window, burst, shadow, queue limit,
 *            queue wait, stepped, concurrent slots)
 */

/** Slots per group: a key lives in one of two groups and never probes further. */
export const WAYS = 8;
/** Int32 words per slot in `slots`: the tag, then four hash lanes. */
export const SLOT_INTS = 5;
/** Float64 words per policy in `params`. */
export const PARAM_FLOATS = 8;

export const H_MAGIC = 0;
export const H_VERSION = 1;
export const H_GROUPS = 2;
export const H_CAP = 3;
export const H_MAX_POLICIES = 4;
export const H_POLICY_COUNT = 5;
export const H_POLICY_LOCK = 6;
export const H_SWEEPING = 7;
export const H_SIZE = 8;
export const H_SEED = 9;
const HEADER_INTS = 16;

export const C_EVICTIONS = 0;
export const C_FULL_DROPPED = 1;
export const C_SWEEPS = 2;
const COUNTERS = 4;

const MAGIC = 0x534c4331; // "SLC1"
const VERSION = 1;

/** Typed views over one shared table; every thread that attaches builds its own. */
export interface TableViews {
  readonly buffer: SharedArrayBuffer;
  readonly header: Int32Array;
  readonly counters: BigInt64Array;
  readonly locks: Int32Array;
  readonly slots: Int32Array;
  readonly state: Float64Array;
  readonly policyHashes: Int32Array;
  readonly params: Float64Array;
  /** Groups in the table, a power of two. */
  readonly groups: number;
  readonly maxTrackedKeys: number;
  readonly maxPolicies: number;
}

const align8 = (n: number) => Math.ceil(n / 8) * 8;

function layout(groups: number, maxPolicies: number) {
  const slotCount = groups * WAYS;
  const header = 0;
  const counters = HEADER_INTS * 4;
  const locks = counters + COUNTERS * 8;
  const slots = locks + groups * 4;
  const state = align8(slots + slotCount * SLOT_INTS * 4);
  const policyHashes = state + slotCount * 2 * 8;
  const params = align8(policyHashes + maxPolicies * 4 * 4);
  const bytes = params + maxPolicies * PARAM_FLOATS * 8;
  return { header, counters, locks, slots, state, policyHashes, params, bytes, slotCount };
}

/**
 * The groups for a cap: at least twice as many slots as keys (load at most one half), so a key's two candidate
 * groups almost never both fill up before the cap does.
 */
export function groupsFor(maxTrackedKeys: number): number {
  let groups = 1;
  while (groups * WAYS < maxTrackedKeys * 2) groups *= 2;
  return groups;
}

/** Bytes a table for these sizes takes; lets a caller size it before allocating. */
export function tableBytes(maxTrackedKeys: number, maxPolicies: number): number {
  return layout(groupsFor(maxTrackedKeys), maxPolicies).bytes;
}

/** Allocates and initialises a table; the buffer is what a worker thread receives to attach. */
export function allocateTable(maxTrackedKeys: number, maxPolicies: number, seed: number): TableViews {
  const groups = groupsFor(maxTrackedKeys);
  const buffer = new SharedArrayBuffer(layout(groups, maxPolicies).bytes);
  const header = new Int32Array(buffer, 0, HEADER_INTS);
  header[H_GROUPS] = groups;
  header[H_CAP] = maxTrackedKeys;
  header[H_MAX_POLICIES] = maxPolicies;
  header[H_SEED] = seed;
  header[H_VERSION] = VERSION;
  // Published last: a view built before this line would refuse the buffer.
  Atomics.store(header, H_MAGIC, MAGIC);
  return attachTable(buffer);
}

/**
 * Builds the views over a table allocated by {@link allocateTable}, in this thread or another.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` when the buffer is not a shared bucket table of this version.
 */
export function attachTable(buffer: SharedArrayBuffer): TableViews {
  if (!(buffer instanceof SharedArrayBuffer) || buffer.byteLength < HEADER_INTS * 4) {
    throw new SluiceError(ErrorCode.InvalidOption, 'table must be the SharedArrayBuffer of a SharedStore', {
      option: 'table',
    });
  }
  const header = new Int32Array(buffer, 0, HEADER_INTS);
  if (Atomics.load(header, H_MAGIC) !== MAGIC || header[H_VERSION] !== VERSION) {
    throw new SluiceError(
      ErrorCode.InvalidOption,
      `table must be the SharedArrayBuffer of a SharedStore (table layout version ${VERSION}); this buffer is not one`,
      { option: 'table' },
    );
  }
  const groups = header[H_GROUPS];
  const maxPolicies = header[H_MAX_POLICIES];
  const l = layout(groups, maxPolicies);
  return {
    buffer,
    header,
    counters: new BigInt64Array(buffer, l.counters, COUNTERS),
    locks: new Int32Array(buffer, l.locks, groups),
    slots: new Int32Array(buffer, l.slots, l.slotCount * SLOT_INTS),
    state: new Float64Array(buffer, l.state, l.slotCount * 2),
    policyHashes: new Int32Array(buffer, l.policyHashes, maxPolicies * 4),
    params: new Float64Array(buffer, l.params, maxPolicies * PARAM_FLOATS),
    groups,
    maxTrackedKeys: header[H_CAP],
    maxPolicies,
  };
}
