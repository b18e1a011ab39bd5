import type { DashboardStatus, StoreHealth } from '../../src/dashboard/dashboard-frame.js';
import type { BucketView } from '../../src/server/admin-server.js';
import { bar, type Child, fill, h } from './dom.js';
import { count, duration, orNone, percent } from './format.js';
import type { PolicyTotals } from './rate-model.js';

/** The policy table: decisions per policy and tier over the last minute, busiest first. */
export function renderPolicies(tbody: HTMLElement, rows: readonly PolicyTotals[]): void {
  if (rows.length === 0) {
    fill(tbody, h('tr', {}, h('td', { colspan: 6, class: 'empty' }, 'No decisions yet.')));
    return;
  }
  fill(
    tbody,
    ...rows.map((r) => {
      const total = r.allowed + r.limited + r.deniedByOther;
      const share = total === 0 ? 0 : r.limited / total;
      return h(
        'tr',
        {},
        h('td', { class: 'mono' }, r.policy),
        h('td', {}, orNone(r.tier)),
        h('td', { class: 'num' }, count(r.allowed)),
        h('td', { class: 'num' }, count(r.limited)),
        h('td', { class: 'num opt' }, count(r.deniedByOther)),
        h(
          'td',
          { class: 'bar-cell opt' },
          bar(share, share >= 0.5 ? 'danger' : share > 0 ? 'warn' : 'ok'),
          h('span', { class: 'sr-only' }, percent(r.limited, total)),
        ),
      );
    }),
  );
}

/** The store card: kind, failure mode, tracked keys against the cap, evictions, errors. */
export function renderStore(
  dl: HTMLElement,
  badge: HTMLElement,
  store: StoreHealth,
  lastMinute: readonly [number, number, number],
): void {
  badge.textContent = store.failureModeActive ? 'Failure mode active' : 'Healthy';
  badge.className = `badge ${store.failureModeActive ? 'tone-danger' : 'tone-ok'}`;
  const items: [string, Child][] = [
    ['Store', store.kind === 'memory' ? 'memory (this process)' : store.kind],
    [
      'Failure mode',
      `${store.failureMode}${store.failureModeActive ? ' (active: the store is not answering)' : ' (standing by)'}`,
    ],
  ];
  if (store.trackedKeys !== undefined) {
    const cap = store.maxTrackedKeys;
    const keys: Child[] = [];
    if (cap !== undefined) {
      const meter = h('meter', {
        min: 0,
        max: cap,
        value: store.trackedKeys,
        high: Math.floor(cap * 0.8),
        optimum: 0,
        'aria-label': 'Tracked keys against the cap',
      });
      keys.push(meter, `${count(store.trackedKeys)} of ${count(cap)} (${percent(store.trackedKeys, cap)})`);
    } else keys.push(count(store.trackedKeys));
    items.push(['Tracked keys', h('span', {}, ...keys)]);
  }
  if (store.evictions !== undefined) items.push(['Evictions', `${count(store.evictions)} since start`]);
  if (store.fullDropped !== undefined) items.push(['Full buckets dropped', count(store.fullDropped)]);
  if (store.redis !== undefined) {
    const r = store.redis;
    items.push(
      ['Redis state', r.state === 'redis' ? 'answering' : 'fallback (failure mode decides)'],
      ['Redis errors', `${count(r.errors)} (${count(r.timeouts)} timeouts)`],
      ['Failovers', `${count(r.failovers)} (${count(r.recoveries)} recoveries)`],
      ['Fallback decisions', count(r.fallbackDecisions)],
      ['Deny cache', `${count(r.denyCacheSize)} keys`],
    );
  }
  items.push(
    ['Store errors, 60 s', count(lastMinute[0])],
    ['Failed open / closed, 60 s', `${count(lastMinute[1])} / ${count(lastMinute[2])}`],
  );
  fill(dl, ...items.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** What an operator can do from a row of the top limited keys (each asks for confirmation where it changes state). */
export interface KeyActions {
  inspect(key: string): void;
  reset(key: string): void;
  override(key: string): void;
  block(key: string): void;
}

/** Seconds or minutes since `ms`, for the last-seen column. */
function ago(ms: number | undefined, now: number): string {
  if (ms === undefined) return '';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  return s < 60 ? `${s} s ago` : `${Math.floor(s / 60)} min ago`;
}

/**
 * The top limited keys, with bars relative to the first: what each key is (kind, tenant and client or address,
 * tier, the policy that limited it, last seen) when this gateway limited it lately, else its keyed hash; and,
 * with `actions`, buttons to inspect, reset, override or block it.
 */
export function renderTopKeys(
  host: HTMLElement,
  insight: DashboardStatus['topLimitedKeys'],
  actions?: KeyActions,
  now = Date.now(),
): void {
  if (!insight.available) {
    fill(host, h('p', { class: 'empty' }, insight.reason));
    return;
  }
  if (insight.items.length === 0) {
    fill(host, h('p', { class: 'empty' }, 'No key has been limited yet.'));
    return;
  }
  const max = Math.max(...insight.items.map((i) => i.count));
  const button = (label: string, key: string, run: (key: string) => void) => {
    const b = h(
      'button',
      { type: 'button', class: 'ghost small', 'data-action': label.toLowerCase() },
      label,
    );
    b.addEventListener('click', () => run(key));
    return b;
  };
  fill(
    host,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { id: 'top-keys-table' },
        h('caption', { class: 'sr-only' }, 'Keys denied most often'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Key'),
            h('th', { scope: 'col' }, 'Tier'),
            h('th', { scope: 'col' }, 'Policy'),
            h('th', { scope: 'col', class: 'num' }, 'Denials'),
            h('th', { scope: 'col', class: 'opt' }, 'Last seen'),
            // With actions the bar gives way to the buttons: the count says the same.
            actions === undefined
              ? h('th', { scope: 'col', class: 'opt' }, h('span', { class: 'sr-only' }, 'Share'))
              : null,
            actions === undefined
              ? null
              : h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')),
          ),
        ),
        h(
          'tbody',
          {},
          ...insight.items.map((k) =>
            h(
              'tr',
              { 'data-key': k.key },
              k.key === undefined
                ? h('td', { class: 'mono hash' }, k.hash)
                : h(
                    'td',
                    {},
                    h('span', { class: 'badge' }, k.kind ?? ''),
                    ' ',
                    h('span', { class: 'mono' }, k.who ?? ''),
                  ),
              h('td', {}, k.tier ?? ''),
              h('td', { class: 'mono' }, k.policy),
              h('td', { class: 'num' }, count(k.count)),
              h('td', { class: 'opt' }, ago(k.lastSeenMs, now)),
              actions === undefined
                ? h('td', { class: 'bar-cell opt' }, bar(max === 0 ? 0 : k.count / max, 'danger'))
                : null,
              actions === undefined || k.key === undefined
                ? actions === undefined
                  ? null
                  : h('td', {})
                : h(
                    'td',
                    { class: 'actions' },
                    button('Inspect', k.key, actions.inspect),
                    button('Reset', k.key, actions.reset),
                    button('Override', k.key, actions.override),
                    button('Block', k.key, actions.block),
                  ),
            ),
          ),
        ),
      ),
    ),
  );
}

/** The top tenants by quota usage, each bar with the alert thresholds marked. */
export function renderTenants(host: HTMLElement, insight: DashboardStatus['topTenants']): void {
  if (!insight.available) {
    fill(host, h('p', { class: 'empty' }, insight.reason));
    return;
  }
  if (insight.items.length === 0) {
    fill(host, h('p', { class: 'empty' }, `No tenant usage ${insight.note ?? 'yet'}.`));
    return;
  }
  const thresholds = insight.thresholds ?? [];
  // The track runs to the highest threshold or the highest ratio, whichever is larger, so markers always show.
  const scale = Math.max(1, ...thresholds, ...insight.items.map((i) => i.ratio ?? 0));
  const markers = thresholds.map((t) => ({ at: t / scale, label: `alert at ${Math.round(t * 100)}%` }));
  const tone = (ratio: number | undefined) => {
    if (ratio === undefined) return 'neutral';
    const crossed = thresholds.filter((t) => ratio >= t).length;
    return crossed === 0 ? 'ok' : crossed === thresholds.length ? 'danger' : 'warn';
  };
  const maxUsed = Math.max(...insight.items.map((i) => i.used));
  fill(
    host,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { id: 'top-tenants-table' },
        h('caption', { class: 'sr-only' }, `Tenants with the most usage ${insight.note ?? ''}`),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Tenant'),
            h('th', { scope: 'col', class: 'num' }, 'Used'),
            h('th', { scope: 'col', class: 'num' }, 'Quota'),
            h('th', { scope: 'col' }, 'Usage'),
          ),
        ),
        h(
          'tbody',
          {},
          ...insight.items.map((t) =>
            h(
              'tr',
              {},
              h('td', { class: 'mono' }, t.tenant),
              h('td', { class: 'num' }, count(t.used)),
              h('td', { class: 'num' }, t.quota === undefined ? '-' : count(t.quota)),
              h(
                'td',
                { class: 'bar-cell' },
                t.ratio === undefined
                  ? bar(maxUsed === 0 ? 0 : t.used / maxUsed, 'neutral')
                  : bar(t.ratio / scale, tone(t.ratio), markers),
                h(
                  'span',
                  { class: 'small muted' },
                  t.ratio === undefined ? ' no quota' : ` ${percent(t.used, t.quota ?? 0)}`,
                ),
              ),
            ),
          ),
        ),
      ),
    ),
    h(
      'p',
      { class: 'legend-row' },
      h(
        'span',
        {},
        h('span', { class: 'swatch' }),
        `Alert thresholds: ${thresholds.map((t) => `${Math.round(t * 100)}%`).join(', ') || 'none'}`,
      ),
      insight.note === undefined ? null : h('span', {}, `Usage ${insight.note}`),
    ),
  );
}

/** A key's buckets under every policy, as the admin API returned them. */
export function renderInspection(host: HTMLElement, key: string, buckets: readonly BucketView[]): void {
  fill(
    host,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { id: 'inspect-table' },
        h('caption', { class: 'sr-only' }, `Buckets of ${key}`),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Policy'),
            h('th', { scope: 'col', class: 'opt' }, 'Limit'),
            h('th', { scope: 'col', class: 'num' }, 'Remaining'),
            h('th', { scope: 'col' }, 'Fill'),
            h('th', { scope: 'col', class: 'num' }, 'Full in'),
          ),
        ),
        h(
          'tbody',
          {},
          ...buckets.map((b) => {
            const share = b.burst === 0 ? 0 : b.remaining / b.burst;
            return h(
              'tr',
              {},
              h('td', { class: 'mono' }, b.policy),
              h('td', { class: 'opt' }, `${count(b.quota)} / ${duration(b.window)}, burst ${count(b.burst)}`),
              h('td', { class: 'num' }, `${count(b.remaining)} of ${count(b.burst)}`),
              h(
                'td',
                { class: 'bar-cell' },
                bar(share, share < 0.2 ? 'danger' : share < 0.5 ? 'warn' : 'ok'),
              ),
              h('td', { class: 'num' }, b.resetSeconds === 0 ? 'full' : duration(b.resetSeconds)),
            );
          }),
        ),
      ),
    ),
  );
}
