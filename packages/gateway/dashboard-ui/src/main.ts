import './styles.css';
import { keyAsPattern } from 'sluice';
import type { ListedOverride } from '../../src/admission/override-control.js';
import type { GatewayConfig } from '../../src/config/gateway-config.js';
import type { DashboardStatus, SnapshotMessage, TickMessage } from '../../src/dashboard/dashboard-frame.js';
import { AdminApi, UnauthorizedError } from './admin-api.js';
import { renderCapacity, ShedRates } from './capacity-panel.js';
import { renderConfig } from './config-view.js';
import { byId, fill, h } from './dom.js';
import { openEventStream, type StreamState } from './event-stream.js';
import { clock, count, orNone, percent, rate } from './format.js';
import { OVERRIDES_PAGE_SIZE, renderOverrides, tickCountdowns } from './overrides-panel.js';
import {
  type KeyActions,
  renderInspection,
  renderPolicies,
  renderStore,
  renderTenants,
  renderTopKeys,
} from './panels.js';
import { RateChart } from './rate-chart.js';
import { RateModel, type View } from './rate-model.js';
import { renderUnits, UnitRates } from './units-panel.js';

/** Session storage only: the token lives as long as the tab, and is never written to a URL or a cookie. */
const TOKEN_KEY = 'rate-limit-dashboard.token';
const MINUTE = 60;

const REQUEST_LABELS = { names: ['Allowed', 'Limited', 'Exempt'] as const };
const POLICY_LABELS = { names: ['Allowed', 'Limited', 'Denied by other'] as const };

let api: AdminApi | undefined;
let stopStream: (() => void) | undefined;
let chart: RateChart | undefined;
let model = new RateModel(300);
let view: View = { kind: 'all' };
let status: DashboardStatus | undefined;
const shed = new ShedRates();
let shedRates: readonly number[] = [0, 0, 0];
const units = new UnitRates();
let unitRates: ReadonlyMap<string, number> = new Map();
let configVersion = -1;
let historySeconds = 300;

const connection = byId('connection');
const STATE_TEXT: Record<StreamState | 'locked', string> = {
  locked: 'Locked',
  connecting: 'Connecting',
  live: 'Live',
  reconnecting: 'Reconnecting',
  unauthorized: 'Token refused',
};

function setConnection(state: StreamState | 'locked', detail?: string): void {
  connection.dataset.state = state;
  connection.textContent = STATE_TEXT[state];
  connection.title = detail ?? '';
}

/** How often the overrides panel reads the list again; countdowns move every second in between. */
const OVERRIDES_REFRESH_MS = 5000;
let overridesTimer: ReturnType<typeof setInterval> | undefined;
let overridesTick = 0;
/** The first rule of the page the overrides panel shows. */
let overridesOffset = 0;

async function refreshOverrides(): Promise<void> {
  const a = api;
  if (a === undefined) return;
  const host = byId('overrides');
  try {
    let page = await a.overridesPage(overridesOffset, OVERRIDES_PAGE_SIZE);
    // Rules ended or were removed since: the last page that still has rules.
    if (page.rules.length === 0 && page.total > 0) {
      overridesOffset = Math.floor((page.total - 1) / OVERRIDES_PAGE_SIZE) * OVERRIDES_PAGE_SIZE;
      page = await a.overridesPage(overridesOffset, OVERRIDES_PAGE_SIZE);
    }
    const remove = (rule: ListedOverride) => {
      const what = rule.effect === 'block' ? 'block' : 'override';
      if (
        !window.confirm(
          `Remove the ${what} on ${rule.pattern}? Its requests get the configured limits again.`,
        )
      )
        return;
      a.removeOverride(rule.id, 'removed from the dashboard').then(refreshOverrides, (e: Error) => {
        byId('overrides-error').textContent = e.message;
      });
    };
    renderOverrides(host, page, Date.now(), remove, (offset) => {
      overridesOffset = offset;
      void refreshOverrides();
    });
    byId('overrides-error').textContent = '';
  } catch (e) {
    if (e instanceof UnauthorizedError) lock('The admin token was refused.');
    else byId('overrides-error').textContent = (e as Error).message;
  }
}

function startOverrides(): void {
  clearInterval(overridesTimer);
  overridesTick = 0;
  void refreshOverrides();
  overridesTimer = setInterval(() => {
    overridesTick++;
    const ended = tickCountdowns(byId('overrides'), Date.now());
    if (ended || overridesTick % (OVERRIDES_REFRESH_MS / 1000) === 0) void refreshOverrides();
  }, 1000);
}

function lock(message = ''): void {
  clearInterval(overridesTimer);
  overridesTimer = undefined;
  stopStream?.();
  stopStream = undefined;
  api = undefined;
  sessionStorage.removeItem(TOKEN_KEY);
  configVersion = -1;
  byId('app').hidden = true;
  byId('lock').hidden = true;
  byId('locked').hidden = false;
  byId('token-error').textContent = message;
  setConnection('locked');
  byId<HTMLInputElement>('token').focus();
}

async function unlock(token: string): Promise<void> {
  const candidate = new AdminApi(token);
  let config: GatewayConfig;
  try {
    config = await candidate.config();
  } catch (e) {
    lock(
      e instanceof UnauthorizedError
        ? 'The admin token was refused.'
        : `The admin API did not answer: ${(e as Error).message}`,
    );
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  api = candidate;
  byId('locked').hidden = true;
  byId('app').hidden = false;
  byId('lock').hidden = false;
  byId<HTMLInputElement>('token').value = '';
  byId('token-error').textContent = '';
  showConfig(config);
  startOverrides();
  chart ??= new RateChart(byId('chart'), REQUEST_LABELS);
  stopStream = openEventStream('/dashboard/events', candidate.headers(), {
    snapshot: onSnapshot,
    tick: onTick,
    state: (s, detail) => {
      if (s === 'unauthorized') {
        lock('The admin token was refused (it may have changed on a reload).');
        return;
      }
      setConnection(s, detail);
    },
  });
}

function showConfig(config: GatewayConfig): void {
  renderConfig(byId('config'), config);
  byId('config-meta').textContent = config.file === undefined ? '' : `from ${config.file}`;
}

function onSnapshot(m: SnapshotMessage): void {
  historySeconds = m.historySeconds;
  model = new RateModel(m.historySeconds);
  model.reset(m.historySeconds, m.series, m.rows);
  byId('chart-note').textContent = `Last ${Math.round(m.historySeconds / 60)} minutes, one point per second.`;
  onStatus(m.status);
  refresh();
}

function onTick(m: TickMessage): void {
  model.append(m.series, m.rows);
  onStatus(m.status);
  refresh();
}

function onStatus(s: DashboardStatus): void {
  status = s;
  shedRates = shed.update(s.at, s.capacity?.overload?.shed);
  unitRates = units.update(s.at, s.units);
  if (configVersion !== -1 && s.configVersion !== configVersion && api !== undefined) {
    // The gateway reloaded its configuration: show the new one.
    api.config().then(showConfig, () => undefined);
  }
  configVersion = s.configVersion;
  byId('updated').textContent = `updated ${clock(s.at)}`;
}

function viewLabels() {
  return view.kind === 'policy' ? POLICY_LABELS : REQUEST_LABELS;
}

function refreshViewPicker(): void {
  const select = byId<HTMLSelectElement>('view');
  const { tiers, policies } = model.dimensions();
  const wanted = ['all', ...tiers.map((t) => `tier:${t}`), ...policies.map((p) => `policy:${p}`)];
  const have = [...select.options].map((o) => o.value);
  if (wanted.join('\n') === have.join('\n')) return;
  const current = select.value;
  fill(
    select,
    h('option', { value: 'all' }, 'All requests'),
    tiers.length === 0
      ? null
      : h(
          'optgroup',
          { label: 'Requests by tier' },
          ...tiers.map((t) => h('option', { value: `tier:${t}` }, `Tier ${t}`)),
        ),
    policies.length === 0
      ? null
      : h(
          'optgroup',
          { label: 'Checks by policy' },
          ...policies.map((p) => h('option', { value: `policy:${p}` }, `Policy ${p}`)),
        ),
  );
  select.value = wanted.includes(current) ? current : 'all';
}

function refresh(): void {
  refreshViewPicker();
  const { times, channels } = model.channels(view);
  const labels = viewLabels();
  chart?.update(times, channels, labels, historySeconds);
  const n = times.length;
  const lastSecond = [channels[0][n - 1] ?? 0, channels[1][n - 1] ?? 0, channels[2][n - 1] ?? 0];
  const all = model.totals({ kind: 'all' }, MINUTE);
  const now = model.channels({ kind: 'all' }).channels.map((c) => c[c.length - 1] ?? 0);
  byId('kpi-allowed').textContent = rate(now[0]);
  byId('kpi-limited').textContent = rate(now[1]);
  byId('kpi-exempt').textContent = rate(now[2]);
  byId('kpi-allowed-min').textContent = `${count(all[0])} in 60 s`;
  byId('kpi-limited-min').textContent = `${count(all[1])} in 60 s`;
  byId('kpi-exempt-min').textContent = `${count(all[2])} in 60 s`;
  byId('kpi-share').textContent = percent(all[1], all[0] + all[1]);
  byId('chart').setAttribute(
    'aria-label',
    `${describeView()} per second over the last ${Math.round(n / 60) || 1} minutes; last second: ` +
      labels.names.map((name, i) => `${name.toLowerCase()} ${lastSecond[i]}`).join(', '),
  );
  renderPolicies(byId('policies').querySelector('tbody') as HTMLElement, model.policyTotals(MINUTE));
  const reasons = [...model.exemptByReason(MINUTE)].filter(([, v]) => v > 0);
  byId('exempt-reasons').textContent =
    reasons.length === 0
      ? ''
      : `Exempt in 60 s by reason: ${reasons.map(([r, v]) => `${r} ${count(v)}`).join(', ')}`;
  if (status !== undefined) {
    byId('kpi-inflight').textContent = `${count(status.inflight)} in flight`;
    const s = status.store;
    byId('kpi-store').textContent = s.kind;
    byId('kpi-store-tile').className = `kpi ${s.failureModeActive ? 'tone-danger' : 'tone-ok'}`;
    byId('kpi-store-sub').textContent = s.failureModeActive
      ? `failure mode ${s.failureMode} active`
      : s.trackedKeys !== undefined
        ? `${count(s.trackedKeys)} keys${s.maxTrackedKeys !== undefined ? ` of ${count(s.maxTrackedKeys)}` : ''}`
        : 'healthy';
    renderStore(byId('store'), byId('store-badge'), s, model.storeTotals(MINUTE));
    renderTopKeys(byId('top-keys'), status.topLimitedKeys, KEY_ACTIONS);
    renderTenants(byId('top-tenants'), status.topTenants);
    renderCapacity(byId('capacity-card'), byId('capacity'), status.capacity, shedRates);
    renderUnits(byId('units-card'), byId('units-charged'), status.units, unitRates);
  }
}

function describeView(): string {
  if (view.kind === 'all') return 'All requests';
  if (view.kind === 'tier') return `Requests of tier ${orNone(view.tier)}`;
  return `Checks of policy ${view.policy}`;
}

function parseView(value: string): View {
  if (value.startsWith('tier:')) return { kind: 'tier', tier: value.slice(5) };
  if (value.startsWith('policy:')) return { kind: 'policy', policy: value.slice(7) };
  return { kind: 'all' };
}

/** What the top limited keys' rows do; every change asks first and reports in the inspect panel's line. */
const KEY_ACTIONS: KeyActions = {
  inspect: (key) => {
    byId<HTMLInputElement>('key').value = key;
    void inspect(false);
  },
  reset: (key) => {
    if (!window.confirm(`Reset ${key}? Every bucket of the key starts full again.`)) return;
    byId<HTMLInputElement>('key').value = key;
    void inspect(true);
  },
  override: (key) => {
    const answer = window.prompt(`Requests per minute for ${key} for the next hour (burst the same):`, '600');
    if (answer === null) return;
    const quota = Number(answer);
    void keyChange(key, {
      pattern: keyAsPattern(key) ?? key,
      quota,
      window: 60,
      ttlSeconds: 3600,
      reason: 'set from the dashboard',
    });
  },
  block: (key) => {
    if (!window.confirm(`Block ${key} for one hour? Its requests get 429 with Retry-After until then.`))
      return;
    // A key's spaces, controls and non-ASCII characters are written escaped in a pattern, as the API takes them.
    void keyChange(key, {
      pattern: keyAsPattern(key) ?? key,
      block: 429,
      ttlSeconds: 3600,
      reason: 'blocked from the dashboard',
    });
  },
};

async function keyChange(key: string, body: Record<string, unknown>): Promise<void> {
  const line = byId('inspect-status');
  try {
    await api?.setOverride(body);
    line.className = 'status-line tone-ok';
    line.textContent = body.block === undefined ? `Override set for ${key}.` : `Key ${key} is blocked.`;
    void refreshOverrides();
  } catch (e) {
    line.className = 'status-line tone-danger';
    line.textContent = (e as Error).message;
  }
}

async function inspect(reset: boolean): Promise<void> {
  const input = byId<HTMLInputElement>('key');
  const key = input.value.trim();
  const line = byId('inspect-status');
  if (key === '') {
    line.className = 'status-line tone-danger';
    line.textContent = 'Enter a key first.';
    input.focus();
    return;
  }
  if (api === undefined) return;
  const buttons = [byId<HTMLButtonElement>('inspect'), byId<HTMLButtonElement>('reset')];
  for (const b of buttons) b.disabled = true;
  try {
    if (reset) await api.reset(key);
    const result = await api.inspect(key);
    renderInspection(byId('inspect-result'), result.key, result.buckets);
    line.className = `status-line${reset ? ' tone-ok' : ''}`;
    line.textContent = reset
      ? `Key ${key} was reset: every bucket is full again.`
      : `Key ${key}: ${result.buckets.length} policies.`;
  } catch (e) {
    if (e instanceof UnauthorizedError) {
      lock('The admin token was refused.');
      return;
    }
    line.className = 'status-line tone-danger';
    line.textContent = (e as Error).message;
  } finally {
    for (const b of buttons) b.disabled = false;
  }
}

function start(): void {
  byId('host').textContent = location.host;
  byId('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const token = byId<HTMLInputElement>('token').value.trim();
    if (token !== '') void unlock(token);
  });
  byId('lock').addEventListener('click', () => lock());
  byId('inspect-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void inspect(false);
  });
  byId('reset').addEventListener('click', () => void inspect(true));
  byId<HTMLSelectElement>('view').addEventListener('change', (e) => {
    view = parseView((e.target as HTMLSelectElement).value);
    refresh();
  });
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved === null) lock();
  else void unlock(saved);
}

start();
