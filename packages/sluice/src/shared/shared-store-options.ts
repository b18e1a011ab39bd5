import {
  type Clock,
  ErrorCode,
  integerOption,
  invalidOption,
  objectOption,
  rejectUnknownKeys,
  SluiceError,
} from '../core/index.js';
import { sharedTimeClock } from './shared-time-clock.js';

/** Options of {@link SharedStore}. */
export interface SharedStoreOptions {
  /**
   * The table of another `SharedStore` (its `table` property), passed to this thread through `workerData` or a
   * message: the two stores then hold the same buckets. Absent: a new table is allocated.
   */
  readonly table?: SharedArrayBuffer;
  /** Hard cap on buckets held, over all policies and threads; new tables only. Integer >= 1; default 1,000,000. */
  readonly maxTrackedKeys?: number;
  /** Distinct policy definitions the table tells apart; new tables only. Integer >= 1; default 1,024. */
  readonly maxPolicies?: number;
  /**
   * Milliseconds between sweeps that drop full buckets; 0 turns the timer off. Default 60,000. Stores of several
   * threads may all keep a timer: one sweep runs at a time over the whole table, the others skip their turn.
   */
  readonly sweepIntervalMs?: number;
  /** Buckets examined per sweep slice before yielding to the event loop. Default 2,048. */
  readonly sweepSliceSize?: number;
  /** Buckets sampled when the table is full and a new key arrives. Default 8. */
  readonly evictionSampleSize?: number;
  /**
   * The time source; default {@link sharedTimeClock}, whose readings agree across threads. A clock per thread
   * must agree with the others' to the millisecond, or refill is counted from the wrong time.
   */
  readonly clock?: Clock;
}

/** The frozen, validated options of a {@link SharedStore}. */
export interface ResolvedSharedStoreOptions {
  readonly table: SharedArrayBuffer | undefined;
  readonly maxTrackedKeys: number;
  readonly maxPolicies: number;
  readonly sweepIntervalMs: number;
  readonly sweepSliceSize: number;
  readonly evictionSampleSize: number;
  readonly clock: Clock;
}

const KNOWN = [
  'table',
  'maxTrackedKeys',
  'maxPolicies',
  'sweepIntervalMs',
  'sweepSliceSize',
  'evictionSampleSize',
  'clock',
];

/**
 * Validates {@link SharedStoreOptions} and returns them frozen with defaults applied.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` naming the option, the expectation and the given value.
 */
export function resolveSharedStoreOptions(options: SharedStoreOptions = {}): ResolvedSharedStoreOptions {
  const o = objectOption('SharedStore options', options);
  rejectUnknownKeys('SharedStore options', o, KNOWN);
  const clock = (o.clock ?? sharedTimeClock) as Clock;
  if (typeof clock.now !== 'function' || typeof clock.sleep !== 'function') {
    throw new SluiceError(ErrorCode.InvalidOption, 'clock must have now() and sleep() methods', {
      option: 'clock',
    });
  }
  const table = o.table as SharedArrayBuffer | undefined;
  if (table !== undefined) {
    if (!(table instanceof SharedArrayBuffer)) {
      throw invalidOption('table', 'the SharedArrayBuffer of another SharedStore', table);
    }
    // The sizes of an existing table are fixed: saying them again invites a silent disagreement.
    for (const fixed of ['maxTrackedKeys', 'maxPolicies'] as const) {
      if (o[fixed] !== undefined) {
        throw invalidOption(fixed, 'left out when table is given (the table fixes it)', o[fixed]);
      }
    }
  }
  return Object.freeze({
    table,
    maxTrackedKeys: integerOption('maxTrackedKeys', o.maxTrackedKeys, 1, 2 ** 26, 1_000_000),
    maxPolicies: integerOption('maxPolicies', o.maxPolicies, 1, 65_535, 1024),
    sweepIntervalMs: integerOption('sweepIntervalMs', o.sweepIntervalMs, 0, 2 ** 31 - 1, 60_000),
    sweepSliceSize: integerOption('sweepSliceSize', o.sweepSliceSize, 1, 2 ** 24, 2048),
    evictionSampleSize: integerOption('evictionSampleSize', o.evictionSampleSize, 1, 64, 8),
    clock,
  });
}
