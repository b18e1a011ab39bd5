import type { HttpRequestInfo } from 'sluice/http';
import type { ReserveField } from '../config/resolve-cost.js';

/** A request whose body the pipeline read before admission, because a reservation names one of its fields. */
export interface BodyRead {
  /** The whole request body when it fits the reservation's `maxBytes`; absent when it does not or was not read. */
  readonly bodyForReserve?: Uint8Array;
}

const decoder = new TextDecoder('utf-8', { fatal: false });

/**
 * The reservation of a `reserve: { field, default, maxBytes }` cost: the field of the JSON request body (a whole
 * number of 1 or more, such as `max_tokens`), or `default` when the body is absent, larger than `maxBytes`, not
 * JSON, or has no such whole number.
 */
export function reserveFromBody(field: ReserveField): (request: HttpRequestInfo) => number {
  return (request) => {
    const body = (request as HttpRequestInfo & BodyRead).bodyForReserve;
    if (body === undefined || body.length === 0 || body.length > field.maxBytes) return field.default;
    let v: unknown;
    try {
      v = JSON.parse(decoder.decode(body));
    } catch {
      return field.default;
    }
    for (const seg of field.path) {
      v =
        v !== null && typeof v === 'object' && !Array.isArray(v)
          ? (v as Record<string, unknown>)[seg]
          : undefined;
    }
    return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 ? v : field.default;
  };
}
