import type { ResponseEnd, ResponseHeadView, ResponseObserver } from './response-observer.js';

/**
 * Feeds a {@link ResponseObserver} from a Fetch `Response` (Hono, and any runtime that answers with one): the head
 * at once (a header removed is removed from the response given back), body chunks as the runtime reads the body,
 * and `end` exactly once: when the body has been read whole, when the runtime cancels it (the client went away),
 * or when the body's source fails. Only called for a verdict that holds an observer.
 *
 * @param response - the application's response; its headers may be immutable (a `fetch()` answer passed on).
 * @param observer - what the admitted request holds.
 * @param bytesReceived - the request body bytes, as far as the caller knows them (the declared length).
 * @returns the response to send in its place: the same head, its body read through the observer.
 */
export function observeFetchResponse(
  response: Response,
  observer: ResponseObserver,
  bytesReceived = 0,
): Response {
  let headers = response.headers;
  if (observer.head !== undefined) {
    // A copy, so a header can be removed from a response whose own headers are immutable.
    headers = new Headers(headers);
    observer.head(new FetchHeadView(response.status, headers));
  }
  const source = response.body;
  let sent = 0;
  let ended = false;
  const end = (completed: boolean): void => {
    if (ended) return;
    ended = true;
    const e: ResponseEnd = { completed, status: response.status, bytesSent: sent, bytesReceived };
    observer.end(e);
  };
  if (source === null) {
    // Nothing to stream (204, 304, a bodiless answer): the head is all there is, and it is about to go out.
    end(true);
    return headers === response.headers
      ? response
      : new Response(null, { status: response.status, statusText: response.statusText, headers });
  }
  const reader = source.getReader();
  // A pull source rather than a TransformStream: its `cancel` tells a client that went away from a body read to
  // its end, which a transformer cannot on every runtime.
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await reader.read();
      } catch (error) {
        end(false);
        controller.error(error);
        return;
      }
      if (r.done) {
        controller.close();
        end(true);
        return;
      }
      sent += r.value.byteLength;
      if (observer.wantsBody === true) observer.body?.(r.value);
      controller.enqueue(r.value);
    },
    cancel(reason) {
      end(false);
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}

/** The head view over a Fetch `Headers` object. */
class FetchHeadView implements ResponseHeadView {
  constructor(
    readonly status: number,
    readonly headers: Headers,
  ) {}

  get(name: string): string | undefined {
    return this.headers.get(name) ?? undefined;
  }

  remove(name: string): void {
    this.headers.delete(name);
  }
}
