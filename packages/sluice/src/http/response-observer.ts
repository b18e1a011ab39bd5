/**
 * The seam between admission and the end of a response. A rule that holds something for the life of a request (a
 * concurrency slot, a cost settled from the response, a count that depends on the status) gives the verdict an
 * observer; whoever writes the response (an adapter, the gateway's proxy) feeds it. A request whose rules hold
 * nothing has no observer, and its feeder wraps nothing.
 */

/** Facts about the response as it goes out, fed by an adapter or the gateway's proxy. */
export interface ResponseHeadView {
  /** The status about to be sent. */
  readonly status: number;
  /** A response header's value (several values joined by `, `); `name` is lower case. */
  get(name: string): string | undefined;
  /** Removes a header before it goes out, for example an upstream cost header the client must not see. */
  remove(name: string): void;
}

/** How a response ended, given to {@link ResponseObserver.end} exactly once. */
export interface ResponseEnd {
  /** true when the whole response was written; false for a client abort, an upstream error or a timeout. */
  readonly completed: boolean;
  /** The status sent; 0 when no status was ever sent. */
  readonly status: number;
  /** Response body bytes written to the client. */
  readonly bytesSent: number;
  /** Request body bytes read. */
  readonly bytesReceived: number;
}

/**
 * Something an admitted request holds until its response ends. Feeders call `head` (at most once) and `body`
 * before `end`, and `end` exactly once, whatever becomes of the response.
 */
export interface ResponseObserver {
  /** The response head, before the status line goes out. */
  head?(head: ResponseHeadView): void;
  /** A response body chunk as written to the client; only called when `wantsBody` is true. */
  body?(chunk: Uint8Array): void;
  /** Whether the observer reads body chunks; feeders copy or convert nothing for one that does not. */
  readonly wantsBody?: boolean;
  /** The response ended (written whole, aborted, failed or timed out); called exactly once. */
  end(end: ResponseEnd): void;
}

/**
 * One observer that feeds several: what a request holds when more than one of its rules holds something. Built
 * per request only when two or more observers are present (one is passed on as it is).
 */
export class ComposedObserver implements ResponseObserver {
  readonly wantsBody: boolean;
  readonly #parts: readonly ResponseObserver[];

  /** @param parts - the observers to feed, in order. */
  constructor(parts: readonly ResponseObserver[]) {
    this.#parts = parts;
    let wants = false;
    for (let i = 0; i < parts.length; i++) if (parts[i].wantsBody === true) wants = true;
    this.wantsBody = wants;
  }

  head(head: ResponseHeadView): void {
    const p = this.#parts;
    for (let i = 0; i < p.length; i++) p[i].head?.(head);
  }

  body(chunk: Uint8Array): void {
    const p = this.#parts;
    for (let i = 0; i < p.length; i++) if (p[i].wantsBody === true) p[i].body?.(chunk);
  }

  end(end: ResponseEnd): void {
    // Every part ends even when one throws: a slot must come back whatever a cost observer does.
    const p = this.#parts;
    let failure: unknown;
    for (let i = 0; i < p.length; i++) {
      try {
        p[i].end(end);
      } catch (e) {
        failure ??= e;
      }
    }
    if (failure !== undefined) throw failure;
  }
}

/**
 * The observer of a request that holds `a` and `b`: either alone when the other is absent (no allocation), else
 * both composed.
 *
 * @param a - an observer or nothing.
 * @param b - an observer or nothing.
 */
export function composeObservers(
  a: ResponseObserver | undefined,
  b: ResponseObserver | undefined,
): ResponseObserver | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return new ComposedObserver([a, b]);
}
