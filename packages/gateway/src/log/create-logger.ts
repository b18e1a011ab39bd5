import { type DestinationStream, type Logger, pino } from 'pino';

/**
 * The gateway's logger: pino, one JSON object a line, with `service: "sluice"` on every line. Request lines
 * carry the request id, so one request can be followed through the gateway's and the upstream's logs.
 *
 * @param level - a pino level, `silent` for none.
 * @param destination - where lines go; default standard output.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, base: { service: 'sluice' }, timestamp: pino.stdTimeFunctions.isoTime }, destination);
}

export type { Logger };
