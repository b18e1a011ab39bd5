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
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
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
    destination,
  );
}

export type { Logger };
