import { integerOption, invalidOption, objectOption, rejectUnknownKeys } from '../core/index.js';
import type { HttpRequestInfo } from './types.js';

/**
 * A cost known only when the response ends, on a rule: the units an upstream names in a response header, the body
 * bytes, or numbers of a JSON body (the `usage` of a language model's answer, streamed or not). Exactly one of
 * `header`, `bytes` and `json`. Admission takes `reserve` tokens (default: the rule's `cost`, 1); when the response
 * ends the difference is settled: given back, or charged even below zero (a debt the next requests wait out).
 */
export interface SettleOptions {
  /** Units from this response header: an integer of 0 or more, anything else counts as `fallback`. */
  readonly header?: string;
  /** Keep the header in the answer; by default it is removed before the response goes out. */
  readonly keepHeader?: boolean;
  /** Units are body bytes: of the `response` (what was sent, even when cut short), the `request`, or `both`. */
  readonly bytes?: 'response' | 'request' | 'both';
  /**
   * A numeric field of a JSON response, or of the events of a `text/event-stream` one (the last event carrying
   * it): a dotted path (`usage.total_tokens`), or paths with weights whose sum, rounded up, is the cost
   * (`{ 'usage.prompt_tokens': 1, 'usage.completion_tokens': 4 }`).
   */
  readonly json?: string | Readonly<Record<string, number>>;
  /**
   * Tokens taken at admission, whole tokens >= 1, or a function of the request (`max_tokens` of its body, when
   * the application has read it): a request the bucket cannot cover is refused up front. Default: the rule's cost.
   */
  readonly reserve?: number | ((request: HttpRequestInfo) => number);
  /**
   * Units charged when the header or the JSON field is missing or not a number of 0 or more. Default: the
   * reservation, so a malformed answer costs what admission assumed.
   */
  readonly fallback?: number;
  /** Most response body bytes scanned for `json` (the scan holds no body, this bounds its work). Default 16 MiB. */
  readonly maxScanBytes?: number;
}

/** A compiled {@link SettleOptions}: how one rule's response is turned into units. */
export interface CostSettlement {
  readonly source: 'header' | 'bytes' | 'json';
  /** The metric's `unit` label: `units` (header), `bytes`, `tokens` (json). */
  readonly unit: 'units' | 'bytes' | 'tokens';
  /** The header, lower case, for `header`. */
  readonly header: string | undefined;
  readonly keepHeader: boolean;
  readonly bytes: 'response' | 'request' | 'both';
  /** The JSON paths split at their dots, and their weights, for `json`. */
  readonly paths: readonly (readonly string[])[];
  readonly weights: readonly number[];
  readonly reserve: number | ((request: HttpRequestInfo) => number) | undefined;
  readonly fallback: number | undefined;
  readonly maxScanBytes: number;
}

const KNOWN = ['header', 'keepHeader', 'bytes', 'json', 'reserve', 'fallback', 'maxScanBytes'];
const HEADER = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const PATH = /^[^.\s]+(\.[^.\s]+)*$/;

/**
 * Validates a rule's `settle` option.
 *
 * @param value - the option as given.
 * @param path - the option path for errors, for example `rules[2].settle`.
 * @throws SluiceError `ERR_INVALID_OPTION` naming the option, the expectation and the given value.
 */
export function compileSettlement(value: unknown, path: string): CostSettlement {
  const o = objectOption(path, value);
  rejectUnknownKeys(path, o, KNOWN);
  const given = ['header', 'bytes', 'json'].filter((k) => o[k] !== undefined);
  if (given.length !== 1) {
    throw invalidOption(path, 'exactly one of header, bytes and json', value);
  }
  let header: string | undefined;
  let bytes: CostSettlement['bytes'] = 'response';
  let paths: string[][] = [];
  let weights: number[] = [];
  if (o.header !== undefined) {
    if (typeof o.header !== 'string' || !HEADER.test(o.header)) {
      throw invalidOption(`${path}.header`, 'a header name (x-upstream-cost)', o.header);
    }
    header = o.header.toLowerCase();
  }
  if (o.bytes !== undefined) {
    if (o.bytes !== 'response' && o.bytes !== 'request' && o.bytes !== 'both') {
      throw invalidOption(`${path}.bytes`, "'response', 'request' or 'both'", o.bytes);
    }
    bytes = o.bytes;
  }
  if (o.json !== undefined) [paths, weights] = jsonPaths(o.json, `${path}.json`);
  let reserve: CostSettlement['reserve'];
  if (typeof o.reserve === 'function') reserve = o.reserve as (request: HttpRequestInfo) => number;
  else if (o.reserve !== undefined) reserve = integerOption(`${path}.reserve`, o.reserve, 1);
  const fallback = o.fallback === undefined ? undefined : integerOption(`${path}.fallback`, o.fallback, 0);
  return Object.freeze({
    source: header !== undefined ? 'header' : o.bytes !== undefined ? 'bytes' : 'json',
    unit: header !== undefined ? 'units' : o.bytes !== undefined ? 'bytes' : 'tokens',
    header,
    keepHeader: o.keepHeader === true,
    bytes,
    paths: Object.freeze(paths.map((p) => Object.freeze(p))),
    weights: Object.freeze(weights),
    reserve,
    fallback,
    maxScanBytes: integerOption(`${path}.maxScanBytes`, o.maxScanBytes, 1, 2 ** 40, 16 * 1024 * 1024),
  });
}

function jsonPaths(value: unknown, option: string): [string[][], number[]] {
  const entries: [unknown, unknown][] =
    typeof value === 'string'
      ? [[value, 1]]
      : value !== null && typeof value === 'object' && !Array.isArray(value)
        ? Object.entries(value)
        : [];
  if (entries.length === 0 || entries.length > 31) {
    throw invalidOption(
      option,
      "a dotted path ('usage.total_tokens') or 1 to 31 paths with weights ({ 'usage.prompt_tokens': 1 })",
      value,
    );
  }
  const paths: string[][] = [];
  const weights: number[] = [];
  for (const [p, w] of entries) {
    if (typeof p !== 'string' || !PATH.test(p)) {
      throw invalidOption(option, "dotted paths such as 'usage.total_tokens'", p);
    }
    if (typeof w !== 'number' || !Number.isFinite(w) || w < 0) {
      throw invalidOption(`${option}['${p}']`, 'a weight of 0 or more', w);
    }
    paths.push(p.split('.'));
    weights.push(w);
  }
  return [paths, weights];
}
