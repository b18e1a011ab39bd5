import { invalidOption } from '../core/index.js';

/**
 * Which responses a rule's policies count: `failed` (status 400 and above), `successful` (below 400), or a list
 * of statuses and ranges (`[401, 403, '500-599']`). A request is charged at admission as always, and given its
 * tokens back when its response does not count, so a burst of counted responses can never pass the limit.
 */
export type CountOption = 'failed' | 'successful' | readonly (number | string)[];

/**
 * A compiled {@link CountOption}: one bit per status from 100 to 599, built once per rule. A response that ends
 * before any status was sent (status 0: the client went away, the upstream failed) counts, so that cutting a
 * request short never earns its tokens back.
 */
export class CountFilter {
  /** How the option was written, for logs and docs (`failed`, `successful`, `401,500-599`). */
  readonly label: string;
  readonly #bits = new Uint8Array(600);

  /**
   * @param option - the option as given.
   * @param path - the option path for errors, for example `rules[1].count`.
   * @throws SluiceError `ERR_INVALID_OPTION` naming the option, the expectation and the given value.
   */
  constructor(option: unknown, path: string) {
    if (option === 'failed') {
      this.#bits.fill(1, 400);
      this.label = 'failed';
    } else if (option === 'successful') {
      this.#bits.fill(1, 100, 400);
      this.label = 'successful';
    } else if (Array.isArray(option) && option.length > 0) {
      const parts: string[] = [];
      option.forEach((item: unknown, i: number) => {
        const [lo, hi] = statusRange(item, `${path}[${i}]`);
        this.#bits.fill(1, lo, hi + 1);
        parts.push(lo === hi ? String(lo) : `${lo}-${hi}`);
      });
      this.label = parts.join(',');
    } else {
      throw invalidOption(
        path,
        "'failed', 'successful' or a non-empty list of statuses and ranges (401, '500-599')",
        option,
      );
    }
  }

  /** True when a response of this status counts against the limit. */
  counts(status: number): boolean {
    if (status < 100 || status > 599) return true;
    return this.#bits[status] === 1;
  }
}

const RANGE = /^([1-5][0-9][0-9])\s*-\s*([1-5][0-9][0-9])$/;

function statusRange(item: unknown, path: string): [number, number] {
  if (typeof item === 'number' && Number.isInteger(item) && item >= 100 && item <= 599) return [item, item];
  if (typeof item === 'string') {
    if (/^[1-5][0-9][0-9]$/.test(item)) return [Number(item), Number(item)];
    const m = RANGE.exec(item);
    if (m !== null && Number(m[1]) <= Number(m[2])) return [Number(m[1]), Number(m[2])];
  }
  throw invalidOption(path, "a status from 100 to 599 or a range of them ('500-599')", item);
}
