import type { SnapshotMessage, TickMessage } from '../../src/dashboard/dashboard-frame.js';
import { EventStreamParser } from './sse-parser.js';

/** The connection states the page shows. */
export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'unauthorized';

/** What {@link openEventStream} reports. */
export interface StreamHandlers {
  snapshot(message: SnapshotMessage): void;
  tick(message: TickMessage): void;
  state(state: StreamState, detail?: string): void;
}

/** No message for this long means the stream is stuck (a proxy holding it, a sleeping laptop): reconnect. */
const STALE_MS = 10_000;

/**
 * Reads the dashboard's event stream with `fetch` (so the token goes in a header) and reconnects with backoff
 * (1 s doubling to 15 s) until stopped; each reconnection starts from a fresh snapshot. A 401 stops it: the page
 * asks for the token again.
 *
 * @param url - the stream URL, `/dashboard/events`.
 * @param headers - the authorization header.
 * @param on - the handlers.
 * @returns a function that stops the stream.
 */
export function openEventStream(
  url: string,
  headers: Record<string, string>,
  on: StreamHandlers,
): () => void {
  let stopped = false;
  let controller: AbortController | undefined;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let delay = 1000;

  const run = async () => {
    if (stopped) return;
    controller = new AbortController();
    const abort = controller;
    let watchdog = setTimeout(() => abort.abort(), STALE_MS);
    const fed = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => abort.abort(), STALE_MS);
    };
    try {
      const r = await fetch(url, {
        headers: { ...headers, accept: 'text/event-stream' },
        cache: 'no-store',
        signal: abort.signal,
      });
      if (r.status === 401) {
        stopped = true;
        on.state('unauthorized');
        return;
      }
      if (!r.ok || r.body === null) throw new Error(`the stream answered ${r.status}`);
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      const parser = new EventStreamParser();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        fed();
        for (const e of parser.push(value)) {
          if (e.event === 'snapshot') {
            delay = 1000;
            on.state('live');
            on.snapshot(JSON.parse(e.data) as SnapshotMessage);
          } else if (e.event === 'tick') {
            on.tick(JSON.parse(e.data) as TickMessage);
          }
        }
      }
      throw new Error('the stream ended');
    } catch (e) {
      if (stopped) return;
      on.state('reconnecting', abort.signal.aborted ? 'no update for 10 s' : (e as Error).message);
      retryTimer = setTimeout(run, delay);
      delay = Math.min(delay * 2, 15_000);
    } finally {
      clearTimeout(watchdog);
    }
  };
  on.state('connecting');
  void run();
  return () => {
    stopped = true;
    clearTimeout(retryTimer);
    controller?.abort();
  };
}
