/** One server-sent event. */
export interface ServerEvent {
  /** The `event:` field; `message` when absent. */
  readonly event: string;
  /** The `data:` lines joined by newlines. */
  readonly data: string;
}

/**
 * An incremental parser of the `text/event-stream` format (HTML Living Standard, "Server-sent events"): feed it
 * decoded text as it arrives, in chunks cut anywhere, and it returns the events completed so far. Comments,
 * `id:` and `retry:` lines are ignored (the stream is resumed with a fresh snapshot, not by event id).
 *
 * The page reads the stream with `fetch` rather than `EventSource` because `EventSource` cannot send an
 * `Authorization` header, and the admin token must not travel in the URL.
 *
 * @example
 * ```ts
 * const parser = new EventStreamParser();
 * parser.push('event: tick\ndata: {"a"'); // []
 * parser.push(':1}\n\n'); // [{ event: 'tick', data: '{"a":1}' }]
 * ```
 */
export class EventStreamParser {
  #buffer = '';
  #event = '';
  #data: string[] = [];

  /**
   * @param chunk - the next decoded text of the stream.
   * @returns the events the chunk completed, in order.
   */
  push(chunk: string): ServerEvent[] {
    this.#buffer += chunk;
    const out: ServerEvent[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.#buffer);
      if (m === null) break;
      // A lone CR at the very end may be the first half of a CRLF cut by the chunking: wait for more.
      if (m[0] === '\r' && m.index === this.#buffer.length - 1) break;
      const line = this.#buffer.slice(0, m.index);
      this.#buffer = this.#buffer.slice(m.index + m[0].length);
      if (line === '') {
        if (this.#data.length > 0) out.push({ event: this.#event || 'message', data: this.#data.join('\n') });
        this.#event = '';
        this.#data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') this.#event = value;
      else if (field === 'data') this.#data.push(value);
    }
    return out;
  }
}
