import { ErrorCode, SluiceError } from 'sluice';
import { clfParser } from './clf-parser.js';
import { envoyParser } from './envoy-parser.js';
import { gatewayLogParser } from './gateway-log-parser.js';
import type { FieldMap } from './json-fields.js';
import { jsonParser } from './json-parser.js';
import type { LineParser } from './log-record.js';

/** The access log formats replay reads; `auto` tells them apart by the first line that is not blank. */
export const LOG_FORMATS = ['auto', 'combined', 'common', 'envoy', 'json', 'gateway'] as const;

/** One of {@link LOG_FORMATS}. */
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * Checks a `--format` value.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` naming `--format`, the formats and the value given.
 */
export function logFormat(value: string | undefined): LogFormat {
  if (value === undefined) return 'auto';
  if ((LOG_FORMATS as readonly string[]).includes(value)) return value as LogFormat;
  throw new SluiceError(
    ErrorCode.InvalidOption,
    `--format must be one of ${LOG_FORMATS.join(', ')}, got ${JSON.stringify(value)}`,
    { option: '--format' },
  );
}

/**
 * The format of a log from its first line that is not blank: a JSON object with `service: "sluice"` is the
 * gateway's own log, another JSON object a JSON access log, a line opening with `[` Envoy's default format, anything
 * else NGINX/Apache combined or common (one parser reads both).
 */
export function detectFormat(line: string): Exclude<LogFormat, 'auto'> {
  const s = line.trimStart();
  if (s.startsWith('{')) {
    try {
      const o = JSON.parse(s) as Record<string, unknown>;
      return o !== null && o.service === 'sluice' ? 'gateway' : 'json';
    } catch {
      return 'json';
    }
  }
  return s.startsWith('[') ? 'envoy' : 'combined';
}

/** The parser of a format (`combined` and `common` share one). */
export function parserFor(format: Exclude<LogFormat, 'auto'>, fields: FieldMap): LineParser {
  switch (format) {
    case 'envoy':
      return envoyParser();
    case 'json':
      return jsonParser(fields);
    case 'gateway':
      return gatewayLogParser();
    default:
      return clfParser(fields.durationUnit);
  }
}
