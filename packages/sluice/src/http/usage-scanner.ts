/*
 * Numbers at known paths of a JSON body (`usage.total_tokens`), read as the body streams through: one byte at a
 * time, holding only the container stack, the current key (up to 64 bytes) and the number being read, never the
 * body. A `text/event-stream` body is a series of events whose `data:` lines each carry a JSON document (the usage
 * of OpenAI-compatible streams comes in the last event before `data: [DONE]`); each event is scanned the same way
 * and the last event that carries a path gives its value.
 */

const MAX_DEPTH = 64;
const MAX_KEY = 64;
const MAX_NUMBER = 32;

// Scanner states.
const VALUE = 0; // a value is expected
const AFTER = 1; // after a value: `,`, `}` or `]`
const KEY_OR_END = 2; // in an object, before a key or `}`
const KEY = 3; // in a key string
const COLON = 4; // after a key
const STRING = 5; // in a string value
const NUMBER = 6; // in a number
const LITERAL = 7; // in true, false or null
const DONE = 8; // the document ended
const FAILED = 9; // not JSON, too deep: nothing more is read

const OBJECT = 1;
const ARRAY = 2;

/**
 * A streaming reader of numbers at fixed dotted paths of one JSON document (arrays are indexed by number:
 * `choices.0.index`). Reused across documents with {@link JsonNumberScanner.reset}; allocates only when a key or a
 * number at a wanted depth completes.
 */
export class JsonNumberScanner {
  /** Per wanted path, its value in this document (valid where `found` has the path's bit). */
  readonly values: Float64Array;
  /** Bit i set: path i was read as a finite number in this document. */
  found = 0;
  readonly #paths: readonly (readonly string[])[];
  readonly #types = new Uint8Array(MAX_DEPTH);
  readonly #keys: string[] = [];
  readonly #index = new Int32Array(MAX_DEPTH);
  #depth = 0;
  #state = VALUE;
  #escape = false;
  #text = '';
  #textBytes = 0;

  /** @param paths - the wanted paths, each split at its dots (`['usage', 'total_tokens']`), at most 31. */
  constructor(paths: readonly (readonly string[])[]) {
    this.#paths = paths;
    this.values = new Float64Array(paths.length);
  }

  /** True once the document is complete or cannot be read further. */
  get finished(): boolean {
    return this.#state === DONE || this.#state === FAILED;
  }

  /** True when the bytes so far are not (the start of) a JSON document the scanner follows. */
  get failed(): boolean {
    return this.#state === FAILED;
  }

  /** Starts a new document. */
  reset(): void {
    this.found = 0;
    this.#depth = 0;
    this.#state = VALUE;
    this.#escape = false;
    this.#text = '';
    this.#textBytes = 0;
  }

  /** Reads `bytes[from, to)`. */
  feed(bytes: Uint8Array, from = 0, to = bytes.length): void {
    for (let i = from; i < to; i++) {
      const s = this.#state;
      if (s === FAILED || s === DONE) return;
      const c = bytes[i];
      if (s === STRING || s === KEY) {
        if (this.#escape) {
          this.#escape = false;
          // An escaped key never equals a wanted path's plain segment: it is spoilt on purpose.
          if (s === KEY) this.#textBytes = MAX_KEY + 1;
        } else if (c === 0x5c) this.#escape = true;
        else if (c === 0x22) {
          if (s === KEY) this.#endKey();
          else this.#endValue();
        } else if (s === KEY && this.#textBytes++ < MAX_KEY) this.#text += String.fromCharCode(c);
        continue;
      }
      if (s === NUMBER) {
        if ((c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2d || c === 0x2b || c === 0x65 || c === 0x45) {
          if (this.#textBytes++ < MAX_NUMBER) this.#text += String.fromCharCode(c);
          continue;
        }
        this.#endNumber();
      } else if (s === LITERAL) {
        if (c >= 0x61 && c <= 0x7a) continue;
        this.#endValue();
      }
      this.#structural(c);
    }
  }

  /** Ends the document: a number at its very end completes. */
  end(): void {
    if (this.#state === NUMBER) this.#endNumber();
  }

  #structural(c: number): void {
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) return;
    const s = this.#state;
    if (s === VALUE) {
      if (c === 0x7b) this.#open(OBJECT);
      else if (c === 0x5b) this.#open(ARRAY);
      else if (c === 0x22) this.#state = STRING;
      else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
        this.#state = NUMBER;
        this.#text = String.fromCharCode(c);
        this.#textBytes = 1;
      } else if (c === 0x74 || c === 0x66 || c === 0x6e) this.#state = LITERAL;
      else if (c === 0x5d && this.#types[this.#depth - 1] === ARRAY && this.#index[this.#depth - 1] === 0) {
        this.#close(); // an empty array
      } else this.#state = FAILED;
    } else if (s === AFTER) {
      const top = this.#types[this.#depth - 1];
      if (c === 0x2c && top === OBJECT) this.#state = KEY_OR_END;
      else if (c === 0x2c && top === ARRAY) {
        this.#index[this.#depth - 1]++;
        this.#state = VALUE;
      } else if ((c === 0x7d && top === OBJECT) || (c === 0x5d && top === ARRAY)) this.#close();
      else this.#state = FAILED;
    } else if (s === KEY_OR_END) {
      if (c === 0x22) {
        this.#state = KEY;
        this.#text = '';
        this.#textBytes = 0;
      } else if (c === 0x7d) this.#close();
      else this.#state = FAILED;
    } else if (s === COLON) {
      this.#state = c === 0x3a ? VALUE : FAILED;
    } else this.#state = FAILED;
  }

  #open(type: number): void {
    if (this.#depth === MAX_DEPTH) {
      this.#state = FAILED;
      return;
    }
    this.#types[this.#depth] = type;
    this.#index[this.#depth] = 0;
    this.#depth++;
    this.#state = type === OBJECT ? KEY_OR_END : VALUE;
  }

  #close(): void {
    this.#depth--;
    this.#endValue();
  }

  #endKey(): void {
    this.#keys[this.#depth - 1] = this.#textBytes > MAX_KEY ? '' : this.#text;
    this.#state = COLON;
  }

  #endValue(): void {
    this.#state = this.#depth === 0 ? DONE : AFTER;
  }

  #endNumber(): void {
    const d = this.#depth;
    const paths = this.#paths;
    for (let p = 0; p < paths.length; p++) {
      const path = paths[p];
      if (path.length !== d || !this.#at(path)) continue;
      const v = this.#textBytes > MAX_NUMBER ? Number.NaN : Number(this.#text);
      if (Number.isFinite(v)) {
        this.values[p] = v;
        this.found |= 1 << p;
      }
    }
    this.#endValue();
  }

  /** True when the container stack is at `path`. */
  #at(path: readonly string[]): boolean {
    for (let i = 0; i < path.length; i++) {
      const seg = this.#types[i] === ARRAY ? String(this.#index[i]) : this.#keys[i];
      if (seg !== path[i]) return false;
    }
    return true;
  }
}

// Event-stream line states.
const LINE_START = 0;
const FIELD = 1;
const DATA = 2;
const SKIP = 3;
const DATA_FIELD = [0x64, 0x61, 0x74, 0x61, 0x3a]; // "data:"

/**
 * Numbers at fixed paths of the JSON documents of a `text/event-stream` body (the `data:` lines of each event),
 * read as the body streams. For each path, the value of the last event that carries it; events that are not JSON
 * (`data: [DONE]`) are passed over.
 */
export class EventStreamScanner {
  /** Per wanted path, its value in the last event that carried it. */
  readonly values: Float64Array;
  /** Bit i set: some event carried path i. */
  found = 0;
  readonly #json: JsonNumberScanner;
  #line = LINE_START;
  #fieldAt = 0;
  #afterCr = false;
  #eventHasData = false;
  #spaceSkipped = false;

  /** @param paths - the wanted paths, each split at its dots. */
  constructor(paths: readonly (readonly string[])[]) {
    this.#json = new JsonNumberScanner(paths);
    this.values = new Float64Array(paths.length);
  }

  /** Reads `bytes`. */
  feed(bytes: Uint8Array): void {
    const json = this.#json;
    for (let i = 0; i < bytes.length; i++) {
      const c = bytes[i];
      if (c === 0x0a && this.#afterCr) {
        this.#afterCr = false;
        continue;
      }
      this.#afterCr = c === 0x0d;
      if (c === 0x0a || c === 0x0d) {
        if (this.#line === LINE_START) this.#endEvent();
        else if (this.#line === DATA) json.feed(NEWLINE);
        this.#line = LINE_START;
        continue;
      }
      const l = this.#line;
      if (l === LINE_START || l === FIELD) {
        if (l === LINE_START) this.#fieldAt = 0;
        this.#line = FIELD;
        if (c === DATA_FIELD[this.#fieldAt]) {
          if (++this.#fieldAt === DATA_FIELD.length) {
            this.#line = DATA;
            this.#spaceSkipped = false;
            if (!this.#eventHasData) {
              json.reset();
              this.#eventHasData = true;
            }
          }
        } else this.#line = SKIP;
      } else if (l === DATA) {
        // One space after the colon belongs to the field syntax, not to the data.
        if (!this.#spaceSkipped) {
          this.#spaceSkipped = true;
          if (c === 0x20) continue;
        }
        // The rest of the line in one call: the common case is a whole event per chunk.
        let j = i;
        while (j < bytes.length && bytes[j] !== 0x0a && bytes[j] !== 0x0d) j++;
        json.feed(bytes, i, j);
        i = j - 1;
      }
    }
  }

  /** Ends the body: an event not closed by a blank line still counts. */
  end(): void {
    this.#endEvent();
  }

  #endEvent(): void {
    if (!this.#eventHasData) return;
    this.#eventHasData = false;
    const json = this.#json;
    json.end();
    if (json.failed || json.found === 0) return;
    for (let p = 0; p < this.values.length; p++) {
      if ((json.found & (1 << p)) !== 0) this.values[p] = json.values[p];
    }
    this.found |= json.found;
  }
}

const NEWLINE = new Uint8Array([0x0a]);
