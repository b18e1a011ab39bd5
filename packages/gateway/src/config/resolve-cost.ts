import type { CountOption } from 'sluice/http';
import { sizeBytes } from './duration.js';
import type { SemanticIssue } from './semantic-issue.js';
import type { ConfigPath } from './violation.js';

/** A reservation read from the JSON request body: a field such as `max_tokens`, bounded in bytes read. */
export interface ReserveField {
  /** The field's path, split at its dots. */
  readonly path: readonly string[];
  /** Tokens reserved when the body has no such field or is not JSON. */
  readonly default: number;
  /** Most request body bytes read for it. */
  readonly maxBytes: number;
}

/**
 * `cost:` of a tier, an endpoint rule or a policy class as the resolved configuration holds it: what the
 * response is charged (one of `header`, `bytes`, `json`), and what admission reserves.
 */
export interface CostConfig {
  readonly header?: string;
  readonly keepHeader: boolean;
  readonly bytes?: 'response' | 'request' | 'both';
  readonly json?: string | Readonly<Record<string, number>>;
  /** Tokens reserved at admission, a number or a field of the request body; absent: the request's cost. */
  readonly reserve?: number | ReserveField;
  readonly fallback?: number;
}

interface RawCost {
  readonly header?: string;
  readonly keepHeader?: boolean;
  readonly bytes?: 'response' | 'request' | 'both';
  readonly json?: string | Record<string, number>;
  readonly reserve?:
    | number
    | { readonly field: string; readonly default: number; readonly maxBytes?: number | string };
  readonly fallback?: number;
}

/** Default bytes of a request body read for a reservation field. */
export const RESERVE_FIELD_BYTES = 64 * 1024;

/**
 * The `cost` and `count` of a tier, endpoint rule or class. The schema has checked the shapes (a positive
 * reserve, a known `bytes`, a non-empty `count` list); what it cannot say is reported here at its line: a cost
 * that names none or several of `header`, `bytes` and `json`, keys that make no sense without `header` or
 * `json`, a status range written backwards.
 *
 * @param raw - the tier, rule or class as parsed.
 * @param path - where it is.
 * @param issues - where issues are added.
 * @param burst - the burst of the bucket the reservation is taken from, when known: a reservation above it is
 *   refused, since no wait could ever cover it and every request would get 429.
 */
export function resolveCost(
  raw: { readonly cost?: RawCost; readonly count?: CountOption },
  path: ConfigPath,
  issues: SemanticIssue[],
  burst?: number,
): { readonly cost?: CostConfig; readonly count?: CountOption } {
  const out: { cost?: CostConfig; count?: CountOption } = {};
  const c = raw.cost;
  if (c !== undefined) {
    const at = [...path, 'cost'];
    const sources = (['header', 'bytes', 'json'] as const).filter((k) => c[k] !== undefined);
    if (sources.length !== 1) {
      issues.push({
        path: sources.length === 0 ? at : [...at, sources[1]],
        message:
          sources.length === 0
            ? 'names no units: add one of header (an upstream header), bytes (response, request or both) or json (a path such as usage.total_tokens)'
            : `takes one of header, bytes and json, got ${sources.join(' and ')}: keep one`,
        ...(sources.length === 0 ? {} : { atKey: true }),
      });
    }
    if (c.keepHeader !== undefined && c.header === undefined) {
      issues.push({
        path: [...at, 'keepHeader'],
        message: 'applies to a header cost only: remove it or add header',
        atKey: true,
      });
    }
    if (c.fallback !== undefined && c.header === undefined && c.json === undefined) {
      issues.push({
        path: [...at, 'fallback'],
        message: 'applies to a header or json cost only (bytes are always known): remove it',
        atKey: true,
      });
    }
    let reserve: CostConfig['reserve'];
    if (typeof c.reserve === 'number') reserve = c.reserve;
    else if (c.reserve !== undefined) {
      reserve = Object.freeze({
        path: Object.freeze(c.reserve.field.split('.')),
        default: c.reserve.default,
        maxBytes:
          c.reserve.maxBytes === undefined
            ? RESERVE_FIELD_BYTES
            : (sizeBytes(c.reserve.maxBytes) ?? RESERVE_FIELD_BYTES),
      });
    }
    if (burst !== undefined && burst > 0) reserveIssue(c.reserve, burst, [...at, 'reserve'], issues);
    out.cost = Object.freeze({
      ...(c.header === undefined ? {} : { header: c.header }),
      keepHeader: c.keepHeader === true,
      ...(c.bytes === undefined ? {} : { bytes: c.bytes }),
      ...(c.json === undefined ? {} : { json: c.json }),
      ...(reserve === undefined ? {} : { reserve }),
      ...(c.fallback === undefined ? {} : { fallback: c.fallback }),
    });
  }
  if (raw.count !== undefined) {
    if (Array.isArray(raw.count)) {
      raw.count.forEach((item, i) => {
        const m = typeof item === 'string' ? /^(\d+)-(\d+)$/.exec(item) : null;
        if (m !== null && Number(m[1]) > Number(m[2])) {
          issues.push({
            path: [...path, 'count', i],
            message: `is a range written backwards: write ${m[2]}-${m[1]}`,
          });
        }
      });
    }
    out.count = raw.count;
  }
  return out;
}

/** A fixed reservation, or a reservation field's default, above the burst: refused at its line. */
function reserveIssue(
  reserve: RawCost['reserve'],
  burst: number,
  at: ConfigPath,
  issues: SemanticIssue[],
): void {
  const n = typeof reserve === 'number' ? reserve : reserve?.default;
  if (typeof n !== 'number' || n <= burst) return;
  issues.push({
    path: typeof reserve === 'number' ? at : [...at, 'default'],
    message: `${n} is above the burst of ${burst}: every request would be refused; lower it or raise the burst`,
  });
}

/**
 * The `cost` and `count` of an endpoint rule: its own, else those of the class it names (each key on its own, so
 * a rule may count only failures of a class that charges tokens).
 */
export function ruleCost(
  raw: { readonly cost?: RawCost; readonly count?: CountOption },
  path: ConfigPath,
  cls: { readonly cost?: CostConfig | undefined; readonly count?: CountOption | undefined } | undefined,
  issues: SemanticIssue[],
  burst?: number,
): { readonly cost?: CostConfig; readonly count?: CountOption } {
  const own = resolveCost(raw, path, issues, burst);
  const cost = own.cost ?? cls?.cost;
  const count = own.count ?? cls?.count;
  return { ...(cost === undefined ? {} : { cost }), ...(count === undefined ? {} : { count }) };
}
