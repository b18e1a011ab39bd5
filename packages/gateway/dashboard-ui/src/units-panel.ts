import type { UnitsView } from '../../src/dashboard/dashboard-frame.js';
import { fill, h } from './dom.js';
import { count, rate } from './format.js';

/**
 * Units charged per second per policy, from two successive statuses' totals (0 before the second, and after a
 * restart made a total smaller).
 */
export class UnitRates {
  #last: { at: number; totals: Map<string, number> } | undefined;
  #rates = new Map<string, number>();

  /** Takes the totals of a status taken at `at` (Unix milliseconds); returns the rates since the last one. */
  update(at: number, view: readonly UnitsView[] | undefined): ReadonlyMap<string, number> {
    if (view === undefined) {
      this.#last = undefined;
      this.#rates = new Map();
      return this.#rates;
    }
    const totals = new Map(view.map((u) => [u.policy, u.units]));
    const last = this.#last;
    if (last !== undefined && at > last.at) {
      const seconds = (at - last.at) / 1000;
      this.#rates = new Map(
        [...totals].map(([p, n]) => [p, Math.max(0, n - (last.totals.get(p) ?? 0)) / seconds]),
      );
      this.#last = { at, totals };
    } else if (last === undefined) this.#last = { at, totals };
    return this.#rates;
  }
}

/**
 * The units card: per policy whose cost is settled from the response, the units charged since the gateway started
 * (tokens, bytes, upstream units, requests that counted) and per second now. Hidden while the configuration
 * settles nothing.
 *
 * @param card - the card, shown or hidden here.
 * @param host - where the content goes.
 * @param view - the status's units, if any.
 * @param perSecond - units per second by policy, from {@link UnitRates}.
 */
export function renderUnits(
  card: HTMLElement,
  host: HTMLElement,
  view: readonly UnitsView[] | undefined,
  perSecond: ReadonlyMap<string, number>,
): void {
  card.hidden = view === undefined;
  if (view === undefined) return;
  if (view.length === 0) {
    fill(host, h('p', { class: 'muted' }, 'No units charged yet.'));
    return;
  }
  fill(
    host,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { id: 'units' },
        h('caption', { class: 'sr-only' }, 'Units charged per policy'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Policy'),
            h('th', { scope: 'col' }, 'Unit'),
            h('th', { scope: 'col', class: 'num' }, 'Charged'),
            h('th', { scope: 'col', class: 'num' }, 'Per second'),
          ),
        ),
        h(
          'tbody',
          {},
          ...view.map((u) =>
            h(
              'tr',
              {},
              h('td', { class: 'mono' }, u.policy),
              h('td', {}, u.unit),
              h('td', { class: 'num' }, count(u.units)),
              h('td', { class: 'num' }, rate(perSecond.get(u.policy) ?? 0)),
            ),
          ),
        ),
      ),
    ),
  );
}
