import type { ListedOverride } from '../../src/admission/override-control.js';
import type { OverridesPage } from './admin-api.js';
import { fill, h } from './dom.js';

/**
 * The seconds left as the panel shows them: `2 h 05 min`, `4 min 09 s`, `9 s`; `ended` at zero.
 *
 * @param seconds - whole seconds left.
 */
export function countdown(seconds: number): string {
  if (seconds <= 0) return 'ended';
  const hrs = Math.floor(seconds / 3600);
  const min = Math.floor((seconds % 3600) / 60);
  const sec = seconds % 60;
  if (hrs > 0) return `${hrs} h ${String(min).padStart(2, '0')} min`;
  if (min > 0) return `${min} min ${String(sec).padStart(2, '0')} s`;
  return `${sec} s`;
}

/** What a rule does, in the panel's words. */
function effectOf(r: ListedOverride): string {
  if (r.effect === 'block') return `Block ${r.status}`;
  if (r.effect === 'unlimited') return 'Unlimited';
  return `${r.quota} / ${r.window} s, burst ${r.burst}`;
}

/** Rules the panel shows at once: a page renders in a few milliseconds whatever the number of rules. */
export const OVERRIDES_PAGE_SIZE = 50;

/**
 * One page of the current overrides and blocks, each with its scope, effect, author and reason, a countdown to its
 * end (the cell carries the end in `data-ends`, so {@link tickCountdowns} updates it every second without a fetch)
 * and a Remove button that asks for confirmation; under it, where the page is among all rules and the buttons to
 * the previous and the next page. Only the page is fetched and built: 100,000 rules cost what 50 do.
 *
 * @param host - the panel's body.
 * @param page - from `GET /overrides?offset=&limit=`.
 * @param nowMs - the browser's clock when they were fetched (ends are counted from it, not the server's clock).
 * @param onRemove - called with a rule the operator confirmed removing.
 * @param onPage - called with the offset of the page the operator asked for.
 */
export function renderOverrides(
  host: HTMLElement,
  page: OverridesPage,
  nowMs: number,
  onRemove: (rule: ListedOverride) => void,
  onPage: (offset: number) => void,
): void {
  const { rules, total, offset } = page;
  if (rules.length === 0 && total === 0) {
    fill(host, h('p', { class: 'empty' }, 'No override or block is in force.'));
    return;
  }
  const count = (n: number) => n.toLocaleString('en-US');
  const last = offset + rules.length;
  const previous = h('button', { type: 'button', class: 'ghost small', 'data-page': 'previous' }, 'Previous');
  const next = h('button', { type: 'button', class: 'ghost small', 'data-page': 'next' }, 'Next');
  (previous as HTMLButtonElement).disabled = offset === 0;
  (next as HTMLButtonElement).disabled = last >= total;
  previous.addEventListener('click', () => onPage(Math.max(0, offset - OVERRIDES_PAGE_SIZE)));
  next.addEventListener('click', () => onPage(offset + OVERRIDES_PAGE_SIZE));
  const pager = h(
    'div',
    { class: 'pager', id: 'overrides-pager' },
    h(
      'span',
      { id: 'overrides-range' },
      rules.length === 0
        ? `none of ${count(total)}`
        : `${count(offset + 1)} to ${count(last)} of ${count(total)}`,
    ),
    previous,
    next,
  );
  fill(
    host,
    pager,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { id: 'overrides-table' },
        h('caption', { class: 'sr-only' }, 'Overrides and blocks in force'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Pattern'),
            h('th', { scope: 'col' }, 'Scope'),
            h('th', { scope: 'col' }, 'Effect'),
            h('th', { scope: 'col' }, 'Ends in'),
            h('th', { scope: 'col', class: 'opt' }, 'By, why'),
            h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')),
          ),
        ),
        h(
          'tbody',
          {},
          ...rules.map((r) => {
            const ends = r.expiresInSeconds === undefined ? undefined : nowMs + r.expiresInSeconds * 1000;
            const remove = h('button', { type: 'button', class: 'ghost small', 'data-id': r.id }, 'Remove');
            remove.addEventListener('click', () => onRemove(r));
            return h(
              'tr',
              { 'data-effect': r.effect },
              h('td', { class: 'mono' }, r.pattern),
              h('td', { class: 'mono' }, r.policy ?? (r.tier === undefined ? 'all' : `tier ${r.tier}`)),
              h('td', {}, effectOf(r)),
              h(
                'td',
                { class: 'countdown', 'data-ends': ends },
                ends === undefined ? 'no end' : countdown(Math.ceil((ends - nowMs) / 1000)),
              ),
              h('td', { class: 'opt' }, `${r.author}: ${r.reason}`),
              h('td', {}, remove),
            );
          }),
        ),
      ),
    ),
  );
}

/**
 * Moves every countdown of the panel to `nowMs`.
 *
 * @returns true when some rule has ended (the caller then fetches the list again).
 */
export function tickCountdowns(host: HTMLElement, nowMs: number): boolean {
  let ended = false;
  for (const cell of host.querySelectorAll<HTMLElement>('td[data-ends]')) {
    const left = Math.ceil((Number(cell.dataset.ends) - nowMs) / 1000);
    cell.textContent = countdown(left);
    if (left <= 0) ended = true;
  }
  return ended;
}
