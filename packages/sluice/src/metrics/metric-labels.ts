import { integerOption, invalidOption, objectOption, rejectUnknownKeys } from '../core/index.js';
import { LabelGuard } from './label-guard.js';

/** Closed sets for the labels of Sluice's metrics; shared by the Prometheus and OpenTelemetry sinks. */
export interface LabelOptions {
  /** Policy names allowed as `policy` values; others become `other`. Default: the first `maxLabelValues` seen. */
  readonly policies?: readonly string[];
  /** Tier names allowed as `tier` values. */
  readonly tiers?: readonly string[];
  /** Endpoint rule names or patterns allowed as `rule` values. */
  readonly rules?: readonly string[];
  /** Exemption reasons allowed as `reason` values. */
  readonly exemptReasons?: readonly string[];
  /** The most distinct values per label without an allow-list. Integer from 1 to 100,000; default 200. */
  readonly maxLabelValues?: number;
  /** The most tenants given a quota usage series at once. Integer from 0 to 100,000; default 100. */
  readonly maxTenantSeries?: number;
}

/** The label option names, for `rejectUnknownKeys` in the sinks' own option checks. */
export const LABEL_OPTION_KEYS: readonly string[] = Object.freeze([
  'policies',
  'tiers',
  'rules',
  'exemptReasons',
  'maxLabelValues',
  'maxTenantSeries',
]);

/**
 * The label guards of one metrics sink: every label value passes through one, so each label stays a closed set
 * (see {@link LabelGuard}). Stores are guarded too, because a store kind is a free string.
 */
export class MetricLabels {
  readonly policy: LabelGuard;
  readonly tier: LabelGuard;
  readonly rule: LabelGuard;
  readonly reason: LabelGuard;
  readonly store: LabelGuard;
  /** The most tenants given a quota usage series. */
  readonly maxTenantSeries: number;

  /**
   * @param options - the sink's options (only the label options are read).
   * @param path - the options' name in error messages.
   * @throws SluiceError `ERR_INVALID_OPTION` for an invalid label option.
   */
  constructor(options: LabelOptions, path: string) {
    const o = objectOption(path, options) as LabelOptions;
    const max = integerOption(`${path}.maxLabelValues`, o.maxLabelValues, 1, 100_000, 200);
    this.maxTenantSeries = integerOption(`${path}.maxTenantSeries`, o.maxTenantSeries, 0, 100_000, 100);
    this.policy = new LabelGuard('policy', list(`${path}.policies`, o.policies), max);
    this.tier = new LabelGuard('tier', list(`${path}.tiers`, o.tiers, ['']), max);
    this.rule = new LabelGuard('rule', list(`${path}.rules`, o.rules, ['']), max);
    this.reason = new LabelGuard('reason', list(`${path}.exemptReasons`, o.exemptReasons), max);
    this.store = new LabelGuard('store', undefined, 32);
  }
}

function list(option: string, value: unknown, extra: readonly string[] = []): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
    throw invalidOption(option, 'an array of strings', value);
  }
  // An empty value means "not given" (no tier, no rule) and is always allowed.
  return [...extra, ...(value as string[])];
}

/** Rejects unknown option keys of a sink, given its own keys besides the label options. */
export function rejectUnknownSinkKeys(path: string, options: object, own: readonly string[]): void {
  rejectUnknownKeys(path, options, [...own, ...LABEL_OPTION_KEYS]);
}

/**
 * Picks the `max` tenants with the highest ratios, so the tenant series stay bounded and show the tenants an
 * operator cares about (the ones nearest their quota).
 */
export function boundedRatios(ratios: ReadonlyMap<string, number>, max: number): [string, number][] {
  const entries = [...ratios].filter(([, r]) => Number.isFinite(r));
  if (entries.length <= max) return entries;
  entries.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return entries.slice(0, max);
}
