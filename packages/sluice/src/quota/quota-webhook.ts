import { randomUUID } from 'node:crypto';
import {
  type Clock,
  ErrorCode,
  integerOption,
  invalidOption,
  objectOption,
  rejectUnknownKeys,
  SluiceError,
  stringOption,
} from '../core/index.js';
import { type LimiterMetrics, noopMetrics } from '../metrics/index.js';
import { wallClock } from './wall-clock.js';
import { signWebhook } from './webhook-signature.js';

/** Options of {@link QuotaWebhook}. */
export interface QuotaWebhookOptions {
  /** Where alerts are POSTed (http or https). */
  readonly url: string;
  /** The HMAC-SHA256 secret; at least 16 characters. */
  readonly secret: string;
  /** Prefix of the headers sent (white label): `<prefix>-signature`, `-delivery`, `-event`. Default `x-sluice`. */
  readonly headerPrefix?: string;
  /** Attempts per delivery, the first included. Integer 1 to 20; default 5. */
  readonly maxAttempts?: number;
  /** Wait before the second attempt, doubled for each further one. Milliseconds; default 500. */
  readonly initialBackoffMs?: number;
  /** The longest wait between attempts, also the cap on a receiver's Retry-After. Milliseconds; default 30,000. */
  readonly maxBackoffMs?: number;
  /** Time allowed for one attempt. Milliseconds; default 5,000. */
  readonly timeoutMs?: number;
  /** Deliveries waiting at most; more are dropped and counted. Default 1,000. */
  readonly maxQueue?: number;
  /** Time for signatures (wall clock) and for the waits between attempts. Default the wall clock. */
  readonly clock?: Clock;
  /** Where delivery outcomes are counted. */
  readonly metrics?: LimiterMetrics;
  /** Called when a delivery is given up (`ERR_WEBHOOK_FAILED`), so it can be logged. */
  readonly onError?: (error: SluiceError) => void;
}

interface Delivery {
  readonly id: string;
  readonly event: string;
  readonly body: string;
}

const RETRYABLE = new Set([408, 425, 429, 500, 502, 503, 504]);

/**
 * Delivers events to an HTTP endpoint, signed and retried, off the request path: `send` only queues and returns.
 * One delivery runs at a time, in order. A failed attempt (network error, timeout, 408, 425, 429 or 5xx) is retried
 * after an exponential backoff (a receiver's Retry-After is honoured up to `maxBackoffMs`); other statuses give
 * up at once. Every attempt of a delivery carries the same delivery id, so a receiver can drop duplicates.
 *
 * @example
 * ```ts
 * const webhook = new QuotaWebhook({ url: 'https://ops.example/hooks/quota', secret: process.env.HOOK_SECRET! });
 * new QuotaTracker({ quotas, webhook });
 * ```
 */
export class QuotaWebhook {
  /** The receiver URL. */
  readonly url: string;
  readonly #secret: string;
  readonly #prefix: string;
  readonly #maxAttempts: number;
  readonly #initialBackoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #timeoutMs: number;
  readonly #maxQueue: number;
  readonly #clock: Clock;
  readonly #metrics: LimiterMetrics;
  readonly #onError: ((error: SluiceError) => void) | undefined;
  readonly #queue: Delivery[] = [];
  readonly #abort = new AbortController();
  #running: Promise<void> | undefined;
  #closed = false;

  /** @throws SluiceError `ERR_INVALID_OPTION` for an invalid option. */
  constructor(options: QuotaWebhookOptions) {
    const o = objectOption('QuotaWebhook options', options);
    rejectUnknownKeys('QuotaWebhook options', o, [
      'url',
      'secret',
      'headerPrefix',
      'maxAttempts',
      'initialBackoffMs',
      'maxBackoffMs',
      'timeoutMs',
      'maxQueue',
      'clock',
      'metrics',
      'onError',
    ]);
    const url = stringOption('webhook.url', o.url);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw invalidOption('webhook.url', 'an absolute http or https URL', url);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw invalidOption('webhook.url', 'an absolute http or https URL', url);
    }
    this.url = url;
    const secret = stringOption('webhook.secret', o.secret);
    if (secret.length < 16)
      throw invalidOption('webhook.secret', 'a string of at least 16 characters', '(hidden)');
    this.#secret = secret;
    const prefix = stringOption('webhook.headerPrefix', o.headerPrefix, 'x-sluice');
    if (!/^[a-z0-9][a-z0-9-]*$/i.test(prefix)) invalidHeader(prefix);
    this.#prefix = prefix.toLowerCase();
    this.#maxAttempts = integerOption('webhook.maxAttempts', o.maxAttempts, 1, 20, 5);
    this.#initialBackoffMs = integerOption('webhook.initialBackoffMs', o.initialBackoffMs, 1, 3_600_000, 500);
    this.#maxBackoffMs = integerOption('webhook.maxBackoffMs', o.maxBackoffMs, 1, 3_600_000, 30_000);
    this.#timeoutMs = integerOption('webhook.timeoutMs', o.timeoutMs, 1, 600_000, 5000);
    this.#maxQueue = integerOption('webhook.maxQueue', o.maxQueue, 1, 1_000_000, 1000);
    this.#clock = (o.clock as Clock | undefined) ?? wallClock;
    this.#metrics = (o.metrics as LimiterMetrics | undefined) ?? noopMetrics;
    if (o.onError !== undefined && typeof o.onError !== 'function') {
      throw invalidOption('webhook.onError', 'a function', o.onError);
    }
    this.#onError = o.onError as ((error: SluiceError) => void) | undefined;
  }

  /** Deliveries queued or in flight. */
  get pending(): number {
    return this.#queue.length;
  }

  /**
   * Queues `payload` as JSON for delivery and returns at once.
   *
   * @param event - the event name, sent in `<prefix>-event`, for example `quota.threshold_crossed`.
   * @param payload - the body, serialised with JSON.stringify.
   * @returns false when the queue is full or the webhook closed (the delivery is dropped and counted).
   */
  send(event: string, payload: unknown): boolean {
    if (this.#closed || this.#queue.length >= this.#maxQueue) {
      this.#metrics.recordWebhook('dropped');
      return false;
    }
    this.#queue.push({ id: randomUUID(), event, body: JSON.stringify(payload) });
    if (this.#running === undefined) this.#running = this.#drain();
    return true;
  }

  /** Resolves once every queued delivery has been delivered or given up. */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  /** Stops: cancels waits and attempts in flight and drops what is queued. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#abort.abort(new SluiceError(ErrorCode.Aborted, 'the webhook was closed'));
    await this.idle();
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0 && !this.#closed) {
        await this.#deliver(this.#queue[0]);
        this.#queue.shift();
      }
      this.#queue.length = 0;
    } finally {
      this.#running = undefined;
    }
  }

  async #deliver(d: Delivery): Promise<void> {
    let last = '';
    for (let attempt = 1; attempt <= this.#maxAttempts; attempt++) {
      let waitMs = Math.min(this.#maxBackoffMs, this.#initialBackoffMs * 2 ** (attempt - 1));
      let retryable = true;
      try {
        const timestamp = Math.floor(this.#clock.now() / 1000);
        const res = await fetch(this.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            [`${this.#prefix}-event`]: d.event,
            [`${this.#prefix}-delivery`]: d.id,
            [`${this.#prefix}-signature`]: signWebhook(this.#secret, timestamp, d.body),
          },
          body: d.body,
          signal: AbortSignal.any([this.#abort.signal, AbortSignal.timeout(this.#timeoutMs)]),
          redirect: 'manual',
        });
        await res.arrayBuffer().catch(() => undefined);
        if (res.status >= 200 && res.status < 300) {
          this.#metrics.recordWebhook('delivered');
          return;
        }
        last = `HTTP ${res.status}`;
        retryable = RETRYABLE.has(res.status);
        const after = retryAfterMs(res.headers.get('retry-after'));
        if (after !== undefined) waitMs = Math.min(this.#maxBackoffMs, Math.max(waitMs, after));
      } catch (error) {
        if (this.#closed) return;
        last = error instanceof Error ? error.message : String(error);
      }
      if (!retryable || attempt === this.#maxAttempts) break;
      this.#metrics.recordWebhook('retried');
      try {
        await this.#clock.sleep(waitMs, this.#abort.signal);
      } catch {
        return;
      }
    }
    this.#metrics.recordWebhook('failed');
    const error = new SluiceError(
      ErrorCode.WebhookFailed,
      `webhook delivery ${d.id} to ${this.url} failed: ${last}`,
      { delivery: d.id, event: d.event, reason: last },
    );
    try {
      this.#onError?.(error);
    } catch {
      // A failing error hook must not stop later deliveries.
    }
  }
}

function invalidHeader(prefix: string): never {
  throw invalidOption('webhook.headerPrefix', 'a header name prefix of letters, digits and hyphens', prefix);
}

function retryAfterMs(value: string | null): number | undefined {
  if (value === null) return undefined;
  const s = value.trim();
  if (/^\d{1,9}$/.test(s)) return Number(s) * 1000;
  // RFC 9111 section 1.2.2: a longer delta-seconds is a valid value too large to represent, read as 2^31 s (then
  // capped at maxBackoffMs), not as malformed and replaced by the short backoff.
  if (/^\d+$/.test(s)) return 2 ** 31 * 1000;
  return undefined;
}
