import { clfVariant } from './clf-parser.js';
import type { FieldMap } from './json-fields.js';
import { detectFormat, type LogFormat, parserFor } from './log-format.js';
import type { LineParser, LogRecord } from './log-record.js';

/** A format chosen for a log and its parser. */
export interface ChosenFormat {
  readonly format: Exclude<LogFormat, 'auto'>;
  readonly parse: LineParser;
}

/**
 * Non-blank lines `auto` tries with every format before it settles for the guess from the first one: a log cut
 * in its first line (`tail -c`, a rotated file) is read in the format of the lines after it, and a foreign file
 * costs a few parses per line only this long.
 */
export const DETECT_LINES = 100;

/** The formats `auto` tries, in order after the first line's guess (`common` is read by the `combined` parser). */
const AUTO_ORDER: readonly Exclude<LogFormat, 'auto' | 'common'>[] = ['gateway', 'json', 'envoy', 'combined'];

/**
 * Chooses the format of one log from the first line a format reads. With a given format, only that one is
 * tried; with `auto`, the guess from the line ({@link detectFormat}) first, then the others, which must read a
 * request (not merely a line of theirs to skip: the gateway's parser skips any JSON line with a `msg`). Either
 * way `combined` and `common` are told apart by the line read (whether it has the two trailing quoted fields),
 * once per log. Only lines before the choice pass through here: the rest go to the chosen parser directly.
 */
export class FormatChoice {
  readonly #given: LogFormat;
  readonly #fields: FieldMap;
  readonly #parsers = new Map<string, LineParser>();
  #firstGuess: Exclude<LogFormat, 'auto'> | undefined;
  #tried = 0;

  /**
   * @param given - the `--format` value.
   * @param fields - where the facts are in JSON logs.
   */
  constructor(given: LogFormat, fields: FieldMap) {
    this.#given = given;
    this.#fields = fields;
  }

  /**
   * Reads one line (not blank) with the candidate formats.
   *
   * @param line - the line.
   * @param rec - the record to fill (cleared here before each try).
   * @returns the format that read it, its parser and what it answered; `undefined` when none read it.
   */
  read(line: string, rec: LogRecord): (ChosenFormat & { readonly got: true | 'skip' }) | undefined {
    this.#tried++;
    const given = this.#given;
    if (given !== 'auto') {
      const got = this.#try(given, line, rec);
      return got === false ? undefined : { ...this.#chosen(given, line), got };
    }
    const guess = detectFormat(line);
    this.#firstGuess ??= guess;
    const first = this.#try(guess, line, rec);
    if (first !== false) return { ...this.#chosen(guess, line), got: first };
    for (const f of AUTO_ORDER) {
      if (f === guess) continue;
      if (this.#try(f, line, rec) === true) return { ...this.#chosen(f, line), got: true };
    }
    return undefined;
  }

  /**
   * With `auto`, after {@link DETECT_LINES} lines no format read: the guess from the first line, as `auto`
   * chose before it tried others, for the rest of the log.
   */
  giveUp(): ChosenFormat | undefined {
    if (this.#given !== 'auto' || this.#tried < DETECT_LINES || this.#firstGuess === undefined)
      return undefined;
    return { format: this.#firstGuess, parse: this.#parser(this.#firstGuess) };
  }

  #try(format: Exclude<LogFormat, 'auto'>, line: string, rec: LogRecord): boolean | 'skip' {
    rec.clear();
    return this.#parser(format)(line, rec);
  }

  #chosen(format: Exclude<LogFormat, 'auto'>, line: string): ChosenFormat {
    const parse = this.#parser(format);
    return format === 'combined' || format === 'common'
      ? { format: clfVariant(line), parse }
      : { format, parse };
  }

  #parser(format: Exclude<LogFormat, 'auto'>): LineParser {
    // One parser for both NGINX variants: it keeps the day of the line it read.
    const name = format === 'common' ? 'combined' : format;
    let p = this.#parsers.get(name);
    if (p === undefined) {
      p = parserFor(format, this.#fields);
      this.#parsers.set(name, p);
    }
    return p;
  }
}
