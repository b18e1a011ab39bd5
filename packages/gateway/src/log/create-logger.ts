import { type DestinationStream, type Logger, pino } from 'pino';
import { LOG_REDACT_PATHS, redactLogFields, redactLogString } from './log-redaction.js';

/**
 * The gateway's logger: pino, one JSON object a line, with `service: "sluice"` on every line. Request lines
 * carry the request id, so one request can be followed through the gateway's and the upstream's logs.
 *
 * No line shows a secret: fields named like a password, secret, token or API key are `[redacted]`, and URL
 * passwords (`redis://user:***@host`) are masked in fields, error messages and the message itself, since
 * messages are often built from configuration values.
 *
 * @param level - a pino level, `silent` for none.
 * @param destination - where lines go; default standard output.
 * @param options - `batch`: request lines are written together (see {@link RequestLog}); default true on
 *   standard output, false on a given destination (a test's or a caller's stream sees each line at once).
 */
export function createLogger(
  level: string,
  destination?: DestinationStream,
  options: { readonly batch?: boolean } = {},
): Logger {
  const logger = pino(
    {
      level,
      base: { service: 'sluice' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: [...LOG_REDACT_PATHS], censor: redactLogString },
      formatters: { log: redactLogFields },
      hooks: {
        logMethod(args, method) {
          for (let i = 0; i < args.length; i++) {
            if (typeof args[i] === 'string') args[i] = redactLogString(args[i]) as string;
          }
          method.apply(this, args);
        },
      },
    },
    // Standard output by default, written synchronously: request lines are the volume, and RequestLog writes
    // many lines in one call, which costs less than pino's default (each write through the thread pool).
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
  // Read by RequestLog (children see it through their prototype): the line format is this function's, and on
  // pino's own standard output request lines may be written together.
  (logger as unknown as Record<symbol, unknown>)[REQUEST_LINES] = Object.freeze({
    batched: options.batch ?? destination === undefined,
  });
  return logger;
}

/**
 * Marks a logger made by {@link createLogger}: its lines have this module's format, so a request line can be
 * built without pino's per-call work; `batched` when it writes to pino's own standard output.
 */
export const REQUEST_LINES: unique symbol = Symbol('sluice.requestLines');

export type { Logger };
