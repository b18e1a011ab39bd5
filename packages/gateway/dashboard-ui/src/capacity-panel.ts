import type { CapacityView } from '../../src/dashboard/dashboard-frame.js';
import { bar, fill, h } from './dom.js';
import { count, rate } from './format.js';

/** The priorities in the order the server counts them. */
const PRIORITIES = ['critical', 'normal', 'sheddable'] as const;

/**
 * Requests shed per second by priority, from two successive statuses' totals (0 before the second, and after a
 * restart made the totals smaller).
 */
export class ShedRates {
  #last: { at: number; shed: readonly number[] } | undefined;
  #rates: readonly number[] = [0, 0, 0];

  /** Takes the totals of a status taken at `at` (Unix milliseconds); returns the rates since the last one. */
  update(at: number, shed: readonly number[] | undefined): readonly number[] {
    const last = this.#last;
    if (shed === undefined) {
      this.#last = undefined;
      this.#rates = [0, 0, 0];
    } else if (last !== undefined && at > last.at) {
      const seconds = (at - last.at) / 1000;
      this.#rates = shed.map((n, i) => Math.max(0, n - (last.shed[i] ?? 0)) / seconds);
      this.#last = { at, shed };
    } else if (last === undefined) this.#last = { at, shed };
    return this.#rates;
  }
}

/**
 * The capacity card: each concurrency policy's requests in flight against its slots per key, and load shedding's
 * limit, requests in flight and requests shed per second by priority. The card stays hidden while the
 * configuration has neither.
 *
 * @param card - the card, shown or hidden here.
 * @param host - where the content goes.
 * @param view - the status's capacity, if any.
 * @param shedPerSecond - requests shed per second by priority, from {@link ShedRates}.
 */
export function renderCapacity(
  card: HTMLElement,
  host: HTMLElement,
  view: CapacityView | undefined,
  shedPerSecond: readonly number[],
): void {
  card.hidden = view === undefined;
  if (view === undefined) return;
  const parts: HTMLElement[] = [];
  const o = view.overload;
  if (o !== undefined) {
    const share = o.limit === 0 ? 0 : o.inFlight / o.limit;
    const shedding = shedPerSecond.some((r) => r > 0);
    parts.push(
      h(
        'dl',
        { class: 'facts', id: 'overload' },
        h('dt', {}, 'Upstream limit'),
        h('dd', { id: 'overload-limit' }, `${count(o.limit)} in flight`),
        h('dt', {}, 'In flight'),
        h(
          'dd',
          { id: 'overload-inflight' },
          bar(share, share >= 1 ? 'danger' : share >= 0.8 ? 'warn' : 'ok'),
          ` ${count(o.inFlight)} of ${count(o.limit)}`,
        ),
        h('dt', {}, 'Shed per second'),
        h(
          'dd',
          { id: 'overload-shed', class: shedding ? 'tone-danger' : '' },
          PRIORITIES.map((p, i) => `${p} ${rate(shedPerSecond[i] ?? 0)}`).join(', '),
        ),
      ),
    );
  }
  if (view.concurrency.length > 0) {
    parts.push(
      h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { id: 'in-flight' },
          h('caption', { class: 'sr-only' }, 'Requests in flight per concurrency policy'),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', { scope: 'col' }, 'Concurrency policy'),
              h('th', { scope: 'col', class: 'num' }, 'In flight'),
              h('th', { scope: 'col', class: 'num' }, 'Slots per key'),
            ),
          ),
          h(
            'tbody',
            {},
            ...view.concurrency.map((c) =>
              h(
                'tr',
                {},
                h('td', { class: 'mono' }, c.policy),
                h('td', { class: 'num' }, count(c.inFlight)),
                h('td', { class: 'num' }, count(c.limit)),
              ),
            ),
          ),
        ),
      ),
    );
  }
  fill(host, ...parts);
}
