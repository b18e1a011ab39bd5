import { count, percent } from '../../dashboard-ui/src/format.js';
import { RateChart } from '../../dashboard-ui/src/rate-chart.js';
import type { ReplayReport } from '../../src/replay/replay-report.js';
// The dashboard's styles: the report looks like the dashboard it complements.
import '../../dashboard-ui/src/styles.css';

/*
 * The page of `sluice replay --html`: the report's data is in the page (a JSON script element), the chart is the
 * dashboard's (uPlot), so the file works offline and alone.
 */

const byId = (id: string) => document.getElementById(id) as HTMLElement;

function el(tag: string, text?: string, cls?: string): HTMLElement {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls !== undefined) e.className = cls;
  return e;
}

function table(
  head: readonly string[],
  rows: readonly (readonly string[])[],
  numeric: readonly boolean[],
  keyCol = -1,
): HTMLElement {
  if (rows.length === 0) return el('p', 'None.', 'muted');
  const t = el('table');
  const tr = el('tr');
  head.forEach((h, i) => {
    const th = el('th', h, numeric[i] ? 'num' : undefined);
    th.setAttribute('scope', 'col');
    tr.append(th);
  });
  const thead = el('thead');
  thead.append(tr);
  const tbody = el('tbody');
  for (const r of rows) {
    const row = el('tr');
    r.forEach((c, i) => {
      row.append(el('td', c, numeric[i] ? 'num' : i === keyCol ? 'mono' : undefined));
    });
    tbody.append(row);
  }
  t.append(thead, tbody);
  return t;
}

function kpi(label: string, value: string, tone = ''): HTMLElement {
  const d = el('div', undefined, `kpi ${tone}`);
  d.append(el('span', label, 'kpi-label'), el('span', value, 'kpi-value'));
  return d;
}

const data = JSON.parse(byId('replay-data').textContent ?? 'null') as ReplayReport | null;
if (data !== null) render(data);

/** The totals of one configuration as key figures. */
function kpis(t: ReplayReport['totals'], keysLimited: number): HTMLElement[] {
  return [
    kpi('Requests', count(t.requests)),
    kpi('Allowed', count(t.allowed + t.exempt), 'tone-ok'),
    kpi('Limited', count(t.limited), 'tone-danger'),
    kpi('Queued', count(t.queued), 'tone-info'),
    kpi('Limited share', percent(t.limited, t.requests)),
    kpi('Keys limited', count(keysLimited)),
  ];
}

/** A configuration's policies as a table. */
function policyTable(policies: ReplayReport['policies']): HTMLElement {
  return table(
    ['Policy', 'Requests', 'Allowed', 'Queued', 'Limited here', 'Shadow would limit'],
    policies.map((p) => [
      p.policy,
      count(p.requests),
      count(p.allowed + p.exempt),
      count(p.queued),
      count(p.limitedHere),
      count(p.wouldLimit),
    ]),
    [false, true, true, true, true, true],
  );
}

/** A configuration's tiers as a table. */
function tierTable(tiers: ReplayReport['tiers']): HTMLElement {
  return table(
    ['Tier', 'Requests', 'Allowed', 'Queued', 'Limited', 'Limited share'],
    tiers.map((x) => [
      x.tier,
      count(x.requests),
      count(x.allowed + x.exempt),
      count(x.queued),
      count(x.limited),
      percent(x.limited, x.requests),
    ]),
    [false, true, true, true, true, true],
  );
}

/** What the text report warns about, as sentences (the same facts, from the same JSON). */
function notices(r: ReplayReport): string[] {
  const out: string[] = [];
  if (r.clientsMissing.lines > 0)
    out.push(
      `${count(r.clientsMissing.lines)} requests had no client address: all were decided as one client, ip:unknown. Log the client's address (Envoy: %DOWNSTREAM_REMOTE_ADDRESS%, or a JSON format with --field client=NAME).`,
    );
  if (r.clientsNotIp.lines > 0)
    out.push(
      `${count(r.clientsNotIp.lines)} requests named a client that is no IP address${r.clientsNotIp.example === undefined ? '' : ` (such as ${r.clientsNotIp.example})`}: they were decided as one client, ip:unknown.`,
    );
  if (r.outOfOrder.reordered > 0)
    out.push(
      `${count(r.outOfOrder.reordered)} lines were earlier than a line before them and were put back in time order (reorder window ${r.outOfOrder.windowSeconds} s).`,
    );
  if (r.outOfOrder.lines > 0)
    out.push(
      `${count(r.outOfOrder.lines)} lines were earlier than the reorder window of ${r.outOfOrder.windowSeconds} s allows (at most ${r.outOfOrder.maxSeconds} s earlier than a line before them) and were decided at the later time.`,
    );
  for (const c of [r, ...(r.against === undefined ? [] : [r.against])]) {
    if (c.penalty !== undefined)
      out.push(
        `${c.config} has a penalty: section, which replay does not apply: a live gateway also blocks keys limited ${c.penalty.after} times within ${c.penalty.withinSeconds} s, so it refuses more than shown here.`,
      );
    // The terminal's sentences (src/replay/capacity-notes.ts), written here too: the page imports no gateway code.
    const k = c.capacity?.concurrency;
    if (k !== undefined && k.withoutDuration > 0)
      out.push(
        `${c.config}: concurrency was not replayed for ${count(k.withoutDuration)} requests whose line has no duration (their slots were given back at once, so the gateway limits more than shown here). Log NGINX $request_time, Apache %D, Envoy %DURATION%, or name a JSON field with --field duration=NAME.`,
      );
    if (k !== undefined && k.endedEarly > 0)
      out.push(
        `${c.config}: ${count(k.endedEarly)} requests gave back their concurrency slots before their end, with more requests in flight at once than replay holds.`,
      );
    if (c.capacity?.overload !== undefined)
      out.push(
        `${c.config}: load shedding (overload:) was not replayed: it follows the upstream's live latency and load, which an access log does not replay, so a gateway over capacity refuses more than shown here.`,
      );
    // The terminal's sentences of costs settled from the response (src/replay/costs-notes.ts).
    const m = c.costs?.notReplayed;
    if (m !== undefined && m.status > 0)
      out.push(
        `${c.config}: count: was not replayed for ${count(m.status)} requests whose line has no status (all counted). Log the status (NGINX $status, Apache %>s) or name a JSON field with --field status=NAME.`,
      );
    if (m !== undefined && m.size > 0)
      out.push(
        `${c.config}: bytes costs were not replayed for ${count(m.size)} requests whose line has no size (charged their reservation). Log NGINX $body_bytes_sent or Apache %b, or name a JSON field with --field bytes=NAME.`,
      );
    if (m !== undefined && m.cost > 0)
      out.push(
        `${c.config}: header or json costs were not replayed for ${count(m.cost)} requests whose line has no cost (charged the fallback). Name the JSON field with --field cost=NAME.`,
      );
  }
  for (const l of r.logs) {
    if (l.error !== undefined) out.push(`${l.name} was read only in part: ${l.error}.`);
  }
  return out;
}

function render(r: ReplayReport): void {
  const span = r.span === undefined ? 'no requests' : `${r.span.from} to ${r.span.to}`;
  byId('subtitle').textContent = `${r.config} over ${r.logs.map((l) => l.name).join(', ')}: ${span}`;
  byId('kpis').append(...kpis(r.totals, r.limitedKeyCount));
  const warn = notices(r);
  if (warn.length > 0) {
    byId('notices-card').hidden = false;
    byId('notices').append(...warn.map((w) => el('li', w)));
  }
  const policies = r.timeline.policies;
  const select = byId('view') as HTMLSelectElement;
  policies.forEach((p, i) => {
    const o = document.createElement('option');
    o.value = String(i);
    o.textContent = `Policy ${p}`;
    select.append(o);
  });
  const labels = { names: ['allowed', 'limited', 'queued'] as [string, string, string] };
  const chart = new RateChart(byId('chart'), labels);
  const show = () => {
    const pi = select.value === 'all' ? -1 : Number(select.value);
    const times: number[] = [];
    const ch: [number[], number[], number[]] = [[], [], []];
    for (const m of r.timeline.minutes) {
      times.push(m[0]);
      // Per minute: [time, allowed, limited, queued, exempt, refused, then per policy allowed, limited, queued].
      const at = pi < 0 ? 1 : 6 + pi * 3;
      const admittedNow = pi < 0 ? m[1] + m[4] : m[at];
      ch[0].push(round(admittedNow / 60));
      ch[1].push(round(m[at + 1] / 60));
      ch[2].push(round(m[at + 2] / 60));
    }
    const first = times[0] ?? 0;
    const last = times[times.length - 1] ?? 0;
    chart.update(times, ch, labels, Math.max(60, last - first));
  };
  select.addEventListener('change', show);
  show();
  byId('policies').append(policyTable(r.policies));
  byId('tiers').append(tierTable(r.tiers));
  byId('keys').append(
    table(
      ['Key', 'Limited', 'First', 'Last', 'Max Retry-After', 'Policies'],
      r.limitedKeys.map((k) => [
        k.key,
        count(k.count),
        k.first,
        k.last,
        `${k.maxRetryAfter} s`,
        k.policies.join(', '),
      ]),
      [false, true, false, false, true, false],
      0,
    ),
  );
  const x = r.against;
  if (x !== undefined) {
    byId('against-card').hidden = false;
    byId('against-summary').textContent =
      `${count(x.flips.toLimited)} requests allowed by ${r.config} are limited by ${x.config}; ` +
      `${count(x.flips.toAllowed)} limited by ${r.config} are allowed by ${x.config}.`;
    byId('against-kpis').append(...kpis(x.totals, x.limitedKeyCount));
    byId('against-policies-title').textContent = `Policies under ${x.config}`;
    byId('against-policies').append(policyTable(x.policies));
    byId('against-tiers-title').textContent = `Tiers under ${x.config}`;
    byId('against-tiers').append(tierTable(x.tiers));
    byId('flips').append(
      table(
        ['Policy', 'Allowed to limited', 'Limited to allowed'],
        x.flips.policies.map((p) => [p.policy, count(p.toLimited), count(p.toAllowed)]),
        [false, true, true],
      ),
    );
    byId('flip-keys').append(
      table(
        ['Key', 'Allowed to limited', 'Limited to allowed'],
        x.flips.keys.map((k) => [k.key, count(k.toLimited), count(k.toAllowed)]),
        [false, true, true],
        0,
      ),
    );
  }
  document.documentElement.dataset.ready = 'true';
}

function round(v: number): number {
  return Math.round(v * 100) / 100;
}
