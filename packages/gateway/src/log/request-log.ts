import { pino } from 'pino';
import type { RequestLogging } from '../config/request-logging.js';
import { type Logger, REQUEST_LINES } from './create-logger.js';
import { redactLogString } from './log-redaction.js';

/** The fields of one request line, in the order they are written. */
export interface RequestLogFields {
  readonly reqId: string;
  readonly method: string;
  readonly url: string;
  readonly status: number;
  /** Milliseconds from the request's start to its response's close; none for an upgrade. */
  readonly ms?: number;
  readonly outcome: string;
  readonly key?: string | undefined;
  readonly tier?: string | undefined;
  /** Set on the line of a protocol upgrade (WebSocket). */
  readonly upgrade?: boolean;
}

/** What pino writes to a stream; only `write` is used. */
interface LineStream {
  write(line: string): unknown;
}

/** The sampler counts in millionths: a share of 5% adds 50,000 per request and keeps one each million. */
const MILLION = 1_000_000;

/**
 * The request log: which requests get a line (`logging.requests`) and the line itself. A line is what
 * `logger.info(fields, 'request')` writes, equal to it once parsed, but built without pino's per-call work: the
 * bindings (`"service":"sluice"`, a thread's number) are serialized once, the time string is reused within a
 * millisecond, the texts of the method, outcome and tier are kept while they repeat, and any other field is
 * quoted as it is when it is printable ASCII, else by `JSON.stringify`. Lines go out whatever the logger's level:
 * the setting decides, so `level: warn` with `requests: all` keeps the request lines and hides the info lines.
 *
 * On the logger's own standard output (no destination given to `createLogger`) lines are written together, in
 * one system call instead of one each: when {@link REQUEST_LINE_BATCH} `bytes` are pending, else by one timer
 * `flushMs` after the first pending line (a ref'd timer, so a process that ends on its own writes them first). A
 * write costs about as much as building a few lines, so a gateway at any rate pays it once per many requests;
 * a line can then follow, by up to `flushMs`, a warning written after it. Other destinations (tests, a caller's
 * stream) get each line at once. A logger not made by `createLogger` gets `logger.info` calls (its level
 * applies).
 */
export class RequestLog {
  readonly #logger: Logger;
  readonly #stream: LineStream | undefined;
  readonly #batched: boolean;
  /** `,"service":"sluice"` and any child's bindings, as pino serialized them. */
  readonly #bindings: string;
  // Methods, outcomes and tiers repeat from request to request: the text of the last one is kept.
  readonly #method = new LastText();
  readonly #outcome = new LastText();
  readonly #tier = new LastText();
  #pending = '';
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  #timeMs = Number.NaN;
  #time = '';
  /** Starts one short of a line, so the first request served as asked is logged and shows the log works. */
  #sampled = MILLION - 1;
  readonly #onTimer = () => {
    this.#timer = undefined;
    this.flush();
  };

  /** @param logger - the gateway's logger (or a child of it): its stream and bindings are read once. */
  constructor(logger: Logger) {
    this.#logger = logger;
    const own = (logger as unknown as Record<symbol, { batched: boolean } | undefined>)[REQUEST_LINES];
    const fields = logger as unknown as Record<symbol, unknown>;
    const stream = fields[pino.symbols.streamSym] as LineStream | undefined;
    const bindings = fields[pino.symbols.chindingsSym];
    const direct = own !== undefined && typeof stream?.write === 'function' && typeof bindings === 'string';
    this.#stream = direct ? stream : undefined;
    this.#bindings = direct ? (bindings as string) : '';
    this.#batched = direct && own.batched;
  }

  /**
   * Whether the request gets a line under `setting`. Requests served as asked (forwarded, exempt, the gateway's
   * own endpoints, preflights) are the routine ones; every other outcome (a denial, a block, a shed, a refusal, an
   * error, an upstream failure, a client gone) is logged under `denied` and under a share.
   *
   * @param setting - `logging.requests` of the configuration in effect.
   * @param outcome - the request line's outcome.
   */
  wants(setting: RequestLogging, outcome: string): boolean {
    const mode = setting.mode;
    if (mode === 'all') return true;
    if (mode === 'none') return false;
    if (!isRoutine(outcome)) return true;
    if (mode === 'denied') return false;
    this.#sampled += Math.round(setting.share * MILLION);
    if (this.#sampled < MILLION) return false;
    this.#sampled -= MILLION;
    return true;
  }

  /** Writes one request line. */
  write(f: RequestLogFields): void {
    if (this.#stream === undefined) {
      this.#logger.info({ ...f }, 'request');
      return;
    }
    let line = `{"level":30,"time":"${this.#isoTime()}"${this.#bindings},"reqId":${text(f.reqId)},"method":${this.#method.of(f.method)},"url":${text(f.url)},"status":${f.status}`;
    if (f.ms !== undefined) line += `,"ms":${f.ms}`;
    line += `,"outcome":${this.#outcome.of(f.outcome)}`;
    if (f.key !== undefined) line += `,"key":${text(f.key)}`;
    if (f.tier !== undefined) line += `,"tier":${this.#tier.of(f.tier)}`;
    if (f.upgrade === true) line += ',"upgrade":true';
    line += ',"msg":"request"}\n';
    if (!this.#batched) {
      this.#stream.write(line);
      return;
    }
    if (this.#pending === '') {
      withPendingLines.add(this);
      if (!exitListener) {
        exitListener = true;
        process.on('exit', flushAllOnExit);
      }
    }
    this.#pending += line;
    if (this.#pending.length >= REQUEST_LINE_BATCH.bytes) this.flush();
    else if (this.#timer === undefined) this.#timer = setTimeout(this.#onTimer, REQUEST_LINE_BATCH.flushMs);
  }

  /** Writes the pending lines now (a gateway stopping, a test); nothing when none are pending. */
  flush(): void {
    if (this.#pending === '') return;
    const text = this.#pending;
    this.#pending = '';
    withPendingLines.delete(this);
    this.#stream?.write(text);
  }

  #isoTime(): string {
    const now = Date.now();
    if (now !== this.#timeMs) {
      this.#timeMs = now;
      this.#time = new Date(now).toISOString();
    }
    return this.#time;
  }
}

/**
 * The logs holding lines not yet written, so that a process ending by `process.exit` (or an uncaught error) still
 * writes them: the destination is synchronous, so an `exit` listener can. One listener for the module, added with
 * the first pending line; a log leaves the set when it writes.
 */
const withPendingLines = new Set<RequestLog>();
let exitListener = false;
function flushAllOnExit(): void {
  for (const log of [...withPendingLines]) log.flush();
}

/**
 * When batched request lines are written: once `bytes` characters are pending, else `flushMs` milliseconds after
 * the first pending line. Like NGINX's `access_log ... buffer=32k flush=...`: a `tail -f` sees lines within a
 * tenth of a second, and a crash loses at most that much.
 */
export const REQUEST_LINE_BATCH = Object.freeze({ bytes: 32 * 1024, flushMs: 100 });

/** Printable ASCII without `"` and `\\`: quoted as it is, which is cheaper than `JSON.stringify`. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A field's text as a JSON string, credentials masked as the logger masks every string field. */
function text(value: string): string {
  const v = redactLogString(value) as string;
  return PLAIN.test(v) ? `"${v}"` : JSON.stringify(v);
}

/** The {@link text} of the last value asked for, kept while the same value comes again. */
class LastText {
  #value: string | undefined = undefined;
  #text = '';

  of(value: string): string {
    if (value !== this.#value) {
      this.#value = value;
      this.#text = text(value);
    }
    return this.#text;
  }
}

function isRoutine(outcome: string): boolean {
  return (
    outcome === 'proxied' || outcome === 'own' || outcome === 'preflight' || outcome.startsWith('exempt_')
  );
}
