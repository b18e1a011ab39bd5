import {
  type Clock,
  ErrorCode,
  integerOption,
  monotonicClock,
  objectOption,
  rejectUnknownKeys,
  SluiceError,
} from '../core/index.js';

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Hard cap on buckets held, over all policies. Integer >= 1; default 1,000,000 (about 60 MB at most). */
  readonly maxTrackedKeys?: number;
  /** Milliseconds between sweeps that drop full buckets; 0 turns the timer off (call `sweep()` yourself). Default 60,000. */
  readonly sweepIntervalMs?: number;
  /** Buckets examined per sweep slice before yielding to the event loop. Default 2,048 (about a third of a millisecond). */
  readonly sweepSliceSize?: number;
  /** Buckets sampled when the table is full and a new key arrives. Default 8. */
  readonly evictionSampleSize?: number;
  /** The time source; default {@link monotonicClock}. */
  readonly clock?: Clock;
}

/** The frozen, validated options of a {@link MemoryStore}. */
export interface ResolvedMemoryStoreOptions {
  readonly maxTrackedKeys: number;
  readonly sweepIntervalMs: number;
  readonly sweepSliceSize: number;
  readonly evictionSampleSize: number;
  readonly clock: Clock;
}

const KNOWN = ['maxTrackedKeys', 'sweepIntervalMs', 'sweepSliceSize', 'evictionSampleSize', 'clock'];

/**
 * Validates {@link MemoryStoreOptions} and returns them frozen with defaults applied.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` naming the option, the expectation and the given value.
 */
export function resolveMemoryStoreOptions(options: MemoryStoreOptions = {}): ResolvedMemoryStoreOptions {
  const o = objectOption('MemoryStore options', options);
  rejectUnknownKeys('MemoryStore options', o, KNOWN);
  const clock = (o.clock ?? monotonicClock) as Clock;
  if (typeof clock.now !== 'function' || typeof clock.sleep !== 'function') {
    throw new SluiceError(ErrorCode.InvalidOption, 'clock must have now() and sleep() methods', {
      option: 'clock',
    });
  }
  return Object.freeze({
    maxTrackedKeys: integerOption('maxTrackedKeys', o.maxTrackedKeys, 1, 2 ** 30, 1_000_000),
    sweepIntervalMs: integerOption('sweepIntervalMs', o.sweepIntervalMs, 0, 2 ** 31 - 1, 60_000),
    sweepSliceSize: integerOption('sweepSliceSize', o.sweepSliceSize, 1, 2 ** 24, 2048),
    evictionSampleSize: integerOption('evictionSampleSize', o.evictionSampleSize, 1, 64, 8),
    clock,
  });
}
