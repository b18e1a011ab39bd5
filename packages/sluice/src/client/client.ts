import type { Clock } from '../core/clock.js';
import { invalidOption } from '../core/options.js';
import { fullJitterDelayMs } from './backoff.js';
import {
  type ClientOptions,
  type FetchFunction,
  type ResolvedClientOptions,
  type RetryContext,
  resolveClientOptions,
} from './client-options.js';
import { isIdempotent } from './idempotency.js';
import { type GiveUpReason, RateLimitExceededError } from './rate-limit-exceeded-error.js';
import { type RateLimitEntry, type RateLimitListener, RateLimitState } from './rate-limit-state.js';
import { readRateLimitHeaders, responseTime } from './read-rate-limit-headers.js';
import { parseRetryAfter } from './retry-after.js';

/** A `fetch` that honours rate limits, with the state it learnt from the responses. */
export interface SluiceClient {
  /**
   * `fetch` with retries and backoff: same arguments, same result, except that it throws
   * {@link RateLimitExceededError} when it gives up on a retryable refusal. Abort through the request's
   * `signal`: waits and retries stop at once and the promise rejects with the signal's reason, as `fetch` does.
   */
  readonly fetch: FetchFunction;
  /** The resolved, frozen options. */
  readonly options: ResolvedClientOptions;
  /** The client's clock; `observedAt`, `nextAt` and `fullAt` of {@link RateLimitEntry} are readings of it. */
  readonly clock: Clock;
  /** The latest entry per origin and policy, or those of one origin. */
  entries(origin?: string): RateLimitEntry[];
  /**
   * Calls `listener` whenever a response changes the state; returns the unsubscribe function.
   *
   * @throws SluiceError `ERR_INVALID_OPTION` when `listener` is not a function.
   */
  subscribe(listener: RateLimitListener): () => void;
  /** Forgets the state of one origin, or of all. */
  clear(origin?: string): void;
}

/**
 * Creates a client: a `fetch` wrapper that retries 429 and 503 with full-jitter exponential backoff, lets
 * `Retry-After` (seconds or HTTP-date) win over the computed delay, reads every rate-limit header form into a
 * per-origin, per-policy state, and can wait before sending when that state says a request would be refused.
 *
 * Retry rules: a 429 is retried for any method (the server did not process the request); other retry statuses
 * only for idempotent methods or requests with an `Idempotency-Key`, unless `retryNonIdempotent`. Bodies that are
 * streams are never replayed: when such a request would need a retry the client throws instead.
 *
 * @param options - see {@link ClientOptions}; defaults follow the contract (retry on, 3 retries, multiplier 2,
 *   at most 60 s).
 * @throws SluiceError `ERR_INVALID_OPTION` for an invalid option.
 *
 * @example
 * ```ts
 * import { createClient } from 'sluice/client';
 * const client = createClient({ baseUrl: 'https://api.example.com', preemptiveWait: true });
 * const res = await client.fetch('/v1/reports', { signal: AbortSignal.timeout(30_000) });
 * client.subscribe(({ entries }) => console.log(entries));
 * ```
 */
export function createClient(options: ClientOptions = {}): SluiceClient {
  const o = resolveClientOptions(options);
  const state = new RateLimitState(o.clock);

  async function clientFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
    const request = isRequest(input) ? input : undefined;
    const url = absoluteUrl(request?.url ?? (input instanceof URL ? input.href : String(input)), o.baseUrl);
    // An unresolvable URL is fetch's to reject, with its own error.
    if (url === undefined) return o.fetch(input, init);
    const target = request ?? url;
    const method = (init?.method ?? request?.method ?? 'GET').toUpperCase();
    const headers = new Headers(init?.headers ?? request?.headers);
    const signal = init?.signal ?? request?.signal ?? undefined;
    const replayable = bodyIsReplayable(request, init);
    const origin = new URL(url).origin;
    let sent = 0;

    for (let attempt = 0; ; attempt++) {
      if (o.preemptiveWait) await waitForAdmission(origin, url, sent, signal);
      signal?.throwIfAborted();
      let response: Response;
      try {
        sent++;
        response = await o.fetch(target, init);
      } catch (error) {
        if (signal?.aborted || o.shouldRetry === undefined || attempt >= o.maxRetries || !replayable)
          throw error;
        const delayMs = backoff(attempt);
        const context: RetryContext = {
          attempt,
          method,
          url,
          response: undefined,
          error,
          retryAfterSeconds: undefined,
          delayMs,
          retry: false,
        };
        // A network failure may have happened after the server acted, so only the caller can say it is safe.
        if ((await o.shouldRetry(context)) !== true) throw error;
        o.onRetry?.(context);
        await o.clock.sleep(delayMs, signal);
        continue;
      }

      const serverNow = responseTime(response.headers, o.wallClock());
      const retryable = o.retryStatuses.includes(response.status);
      const retryAfterSeconds = retryable
        ? parseRetryAfter(response.headers.get('retry-after'), serverNow)
        : undefined;
      state.record(
        originOf(response, origin),
        readRateLimitHeaders(response.headers, serverNow),
        retryAfterSeconds,
        response.status,
      );
      if (!o.retryOnRateLimit || !retryable) return response;

      const delayMs = retryAfterSeconds !== undefined ? retryAfterSeconds * 1000 : backoff(attempt);
      const context: RetryContext = {
        attempt,
        method,
        url,
        response,
        error: undefined,
        retryAfterSeconds,
        delayMs,
        retry: response.status === 429 || o.retryNonIdempotent || isIdempotent(method, headers),
      };
      const verdict = o.shouldRetry === undefined ? undefined : await o.shouldRetry(context);
      if (!(verdict ?? context.retry)) return response;

      let reason: GiveUpReason | undefined;
      if (attempt >= o.maxRetries) reason = 'retries-exhausted';
      else if (retryAfterSeconds !== undefined && retryAfterSeconds > o.maxBackoffSeconds) {
        reason = 'retry-after-exceeds-cap';
      } else if (!replayable) reason = 'body-not-replayable';
      if (reason !== undefined) throw await giveUp(reason, response, method, url, retryAfterSeconds, sent);

      o.onRetry?.(context);
      await discard(response);
      await o.clock.sleep(delayMs, signal);
    }
  }

  function backoff(attempt: number): number {
    return fullJitterDelayMs(
      attempt,
      o.initialBackoffSeconds,
      o.backoffMultiplier,
      o.maxBackoffSeconds,
      o.random,
    );
  }

  async function waitForAdmission(
    origin: string,
    url: string,
    sent: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const waitMs = Math.ceil(state.admitAt(origin) - o.clock.now());
    if (waitMs <= 0) return;
    if (waitMs > o.maxBackoffSeconds * 1000) {
      throw new RateLimitExceededError(
        `${url}: the known rate-limit state admits no request for ${Math.ceil(waitMs / 1000)} s, more than ` +
          `maxBackoffSeconds (${o.maxBackoffSeconds}); nothing was sent`,
        {
          reason: 'wait-exceeds-cap',
          status: undefined,
          problem: undefined,
          retryAfterSeconds: Math.ceil(waitMs / 1000),
          attempts: sent,
          url,
          response: undefined,
        },
      );
    }
    await o.clock.sleep(waitMs, signal);
  }

  async function giveUp(
    reason: GiveUpReason,
    response: Response,
    method: string,
    url: string,
    retryAfterSeconds: number | undefined,
    attempts: number,
  ): Promise<RateLimitExceededError> {
    let text = '';
    try {
      text = await response.text();
    } catch {
      // A body that fails mid-read leaves the error without a problem, not without an error.
    }
    let problem: Record<string, unknown> | undefined;
    if (/json/i.test(response.headers.get('content-type') ?? '')) {
      try {
        const parsed: unknown = JSON.parse(text);
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
          problem = parsed as Record<string, unknown>;
        }
      } catch {
        // Not JSON after all: the text stays readable through `response`.
      }
    }
    const why = {
      'retries-exhausted': `still refused after ${attempts - 1} retries (maxRetries ${o.maxRetries})`,
      'retry-after-exceeds-cap': `asked to wait ${retryAfterSeconds} s, more than maxBackoffSeconds (${o.maxBackoffSeconds})`,
      'body-not-replayable': 'cannot be retried because its body is a stream that the first attempt consumed',
      'wait-exceeds-cap': '',
    }[reason];
    return new RateLimitExceededError(`${method} ${url} got ${response.status}: ${why}`, {
      reason,
      status: response.status,
      problem,
      retryAfterSeconds,
      attempts,
      url,
      response: new Response(text, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      }),
    });
  }

  return Object.freeze({
    fetch: clientFetch,
    options: o,
    clock: o.clock,
    entries: (origin?: string) => state.entries(origin),
    subscribe: (listener: RateLimitListener) => {
      if (typeof listener !== 'function') throw invalidOption('listener', 'a function', listener);
      return state.subscribe(listener);
    },
    clear: (origin?: string) => state.clear(origin),
  });
}

function isRequest(input: RequestInfo | URL): input is Request {
  return (
    typeof input === 'object' && !(input instanceof URL) && typeof (input as Request).method === 'string'
  );
}

function absoluteUrl(raw: string, baseUrl: string | undefined): string | undefined {
  const base = baseUrl ?? (globalThis as { location?: { href?: string } }).location?.href;
  try {
    return new URL(raw, base).href;
  } catch {
    return undefined;
  }
}

function originOf(response: Response, fallback: string): string {
  // After a redirect the headers describe the final origin's limits.
  if (response.url === '') return fallback;
  try {
    return new URL(response.url).origin;
  } catch {
    return fallback;
  }
}

function bodyIsReplayable(request: Request | undefined, init: RequestInit | undefined): boolean {
  const body = init?.body;
  if (body !== undefined && body !== null) return !isStream(body);
  // A Request's body is always a stream to us: it cannot be inspected without reading (buffering) it.
  return request === undefined || request.body === null;
}

function isStream(body: object | string): boolean {
  if (typeof body !== 'object') return false;
  return (
    typeof (body as ReadableStream).getReader === 'function' ||
    typeof (body as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function'
  );
}

async function discard(response: Response): Promise<void> {
  try {
    // Cancelling frees the connection at once instead of waiting for garbage collection.
    await response.body?.cancel();
  } catch {
    // An already broken body needs no cancelling.
  }
}
