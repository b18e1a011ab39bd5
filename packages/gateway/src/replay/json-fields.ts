import { ErrorCode, SluiceError } from 'sluice';
import type { DurationUnit } from './log-duration.js';

/** The request facts a JSON access log can map. */
export const JSON_FIELDS = [
  'time',
  'method',
  'path',
  'request',
  'client',
  'tenant',
  'app',
  'user',
  'tier',
  'apikey',
  'cost',
  'duration',
  'status',
  'bytes',
] as const;

/** One of {@link JSON_FIELDS}. */
export type JsonField = (typeof JSON_FIELDS)[number];

/**
 * Where each fact is in a JSON line: a dotted path into the object. A fact given no `--field` is looked for under
 * the names common loggers use (NGINX `escape=json` variables, pino, Envoy's JSON format), first found wins.
 */
export type FieldMap = Readonly<Record<JsonField, readonly (readonly string[])[]>> & {
  /** `--duration-unit`: the unit of a whole-number duration in every format but Envoy's; absent for each format's own. */
  readonly durationUnit?: DurationUnit | undefined;
};

const DEFAULTS: Readonly<Record<JsonField, readonly string[]>> = {
  time: ['time', 'timestamp', 'ts', '@timestamp', 'time_iso8601', 'start_time', 'msec', 'time_local'],
  method: ['method', 'request_method'],
  path: ['path', 'uri', 'url', 'request_uri'],
  request: ['request'],
  client: ['client', 'client_ip', 'remote_addr', 'ip', 'downstream_remote_address'],
  tenant: ['tenant'],
  app: [],
  user: [],
  tier: ['tier'],
  apikey: [],
  cost: [],
  duration: ['duration', 'request_time', 'duration_ms'],
  status: ['status', 'status_code', 'response_code'],
  bytes: ['body_bytes_sent', 'bytes_sent', 'bytes', 'response_size'],
};

/**
 * Builds the field map from `--field NAME=PATH` options.
 *
 * @param specs - the options' values, for example `time=ts` or `client=req.remote`.
 * @param durationUnit - `--duration-unit`, when given.
 * @returns the map: the given paths, the defaults elsewhere.
 * @throws SluiceError `ERR_INVALID_OPTION` naming `--field` for a value without `=`, an unknown fact or an empty path.
 */
export function fieldMap(specs: readonly string[], durationUnit?: DurationUnit): FieldMap {
  const out = {} as Record<JsonField, (readonly string[])[]> & { durationUnit?: DurationUnit };
  if (durationUnit !== undefined) out.durationUnit = durationUnit;
  for (const f of JSON_FIELDS) out[f] = DEFAULTS[f].map((n) => [n]);
  for (const spec of specs) {
    const eq = spec.indexOf('=');
    const name = eq < 0 ? spec : spec.slice(0, eq);
    const path = eq < 0 ? '' : spec.slice(eq + 1);
    if (!(JSON_FIELDS as readonly string[]).includes(name) || path === '' || path.split('.').includes('')) {
      throw new SluiceError(
        ErrorCode.InvalidOption,
        `--field must be NAME=PATH with NAME one of ${JSON_FIELDS.join(', ')} and PATH a dotted field path, got ${JSON.stringify(spec)}`,
        { option: '--field' },
      );
    }
    out[name as JsonField] = [path.split('.')];
  }
  return out;
}

/** The value at the first path of `paths` present in `o`, or `undefined`. */
export function pick(o: unknown, paths: readonly (readonly string[])[]): unknown {
  for (const path of paths) {
    let v: unknown = o;
    for (const part of path) {
      if (v === null || typeof v !== 'object') {
        v = undefined;
        break;
      }
      v = (v as Record<string, unknown>)[part];
    }
    if (v !== undefined && v !== null && v !== '' && v !== '-') return v;
  }
  return undefined;
}
