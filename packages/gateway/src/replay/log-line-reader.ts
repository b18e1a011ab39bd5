import { FormatChoice } from './format-choice.js';
import type { FieldMap } from './json-fields.js';
import type { LogEncoding } from './log-encoding.js';
import type { LogFormat } from './log-format.js';
import type { LineParser, LogRecord } from './log-record.js';

/** Unknown lines shown by number, per log. */
export const UNKNOWN_SHOWN = 5;

/** What reading one log found. */
export interface LogStats {
  readonly name: string;
  /** The format its lines were read in (`undefined` when no format read one). */
  format: Exclude<LogFormat, 'auto'> | undefined;
  /**
   * With `auto`: the line the format was chosen from, when lines before it were read by no format (a first line
   * cut short). Absent when the first line that is not blank chose it.
   */
  formatLine?: number;
  lines: number;
  requests: number;
  blank: number;
  /** Lines of the format that are no request to admit (the gateway's start-up lines, its health answers). */
  skipped: number;
  unknown: number;
  /** The first unknown lines' numbers, in line order. */
  readonly unknownLines: number[];
  gzip: boolean;
  /** The encoding the log was decoded from, when it was not UTF-8. */
  encoding?: LogEncoding;
  error?: string;
}

/**
 * Reads the lines of one log into records: blank lines, lines to skip and unknown lines are counted in its
 * {@link LogStats}, and the format is chosen from the first line a format reads (with `auto`), then every line
 * goes straight to that format's parser.
 */
export class LogLineReader {
  /** What reading the log found so far. */
  readonly stats: LogStats;
  readonly #choice: FormatChoice;
  readonly #auto: boolean;
  #parse: LineParser | undefined;
  #tried = 0;

  /**
   * @param name - the log's name in the report.
   * @param format - the `--format` value; default `auto`.
   * @param fields - where the facts are in JSON logs.
   */
  constructor(name: string, format: LogFormat | undefined, fields: FieldMap) {
    this.#auto = format === undefined || format === 'auto';
    this.stats = {
      name,
      format: this.#auto ? undefined : (format as LogStats['format']),
      lines: 0,
      requests: 0,
      blank: 0,
      skipped: 0,
      unknown: 0,
      unknownLines: [],
      gzip: false,
    };
    this.#choice = new FormatChoice(format ?? 'auto', fields);
  }

  /**
   * Reads one line into `rec`.
   *
   * @param line - the line, or `undefined` for one too long to be a request.
   * @param no - its 1-based number.
   * @param rec - the record to fill; left as garbage when the line is no request.
   * @returns true when `rec` now holds a request to decide.
   */
  read(line: string | undefined, no: number, rec: LogRecord): boolean {
    if (line === undefined) return this.#unknown(no);
    if (line.length === 0 || (line.charCodeAt(0) <= 32 && line.trim() === '')) {
      this.stats.blank++;
      return false;
    }
    // Every line after the format's choice takes this short path, kept small so that it is inlined in the loop.
    const parse = this.#parse;
    if (parse === undefined) return this.#took(this.#choose(line, no, rec), no);
    rec.clear();
    return this.#took(parse(line, rec), no);
  }

  /** A line before the format is chosen: tried with the candidate formats, choosing one when it reads. */
  #choose(line: string, no: number, rec: LogRecord): boolean | 'skip' {
    const s = this.stats;
    const c = this.#choice.read(line, rec);
    this.#tried++;
    if (c === undefined) {
      const guess = this.#choice.giveUp();
      if (guess !== undefined) {
        s.format = guess.format;
        this.#parse = guess.parse;
      }
      return false;
    }
    s.format = c.format;
    this.#parse = c.parse;
    if (this.#tried > 1 && this.#auto) s.formatLine = no;
    return c.got;
  }

  /** What a parser answered, counted: true for a request. */
  #took(got: boolean | 'skip', no: number): boolean {
    if (got === true) return true;
    if (got === false) return this.#unknown(no);
    this.stats.skipped++;
    return false;
  }

  /**
   * Counts an unknown line. Admission refuses what no request could carry (a cost beyond the engine's range)
   * after later lines were read, so the first numbers are kept sorted, not in the order they came.
   *
   * @param no - the line's number.
   */
  countUnknown(no: number): void {
    const s = this.stats;
    s.unknown++;
    const shown = s.unknownLines;
    if (shown.length === UNKNOWN_SHOWN && no > shown[UNKNOWN_SHOWN - 1]) return;
    let i = shown.length;
    while (i > 0 && shown[i - 1] > no) i--;
    shown.splice(i, 0, no);
    if (shown.length > UNKNOWN_SHOWN) shown.pop();
  }

  #unknown(no: number): false {
    this.countUnknown(no);
    return false;
  }
}
