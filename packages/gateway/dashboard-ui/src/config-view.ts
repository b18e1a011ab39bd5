import type { GatewayConfig } from '../../src/config/gateway-config.js';
import { type Child, fill, h } from './dom.js';
import { count, duration } from './format.js';

function table(
  caption: string,
  head: readonly string[],
  rows: readonly Child[][],
  numeric: readonly number[] = [],
  optional: readonly number[] = [],
) {
  const cls = (i: number) =>
    [numeric.includes(i) ? 'num' : '', optional.includes(i) ? 'opt' : ''].filter((c) => c !== '').join(' ') ||
    undefined;
  if (rows.length === 0) return h('p', { class: 'empty' }, 'None.');
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      {},
      h('caption', { class: 'sr-only' }, caption),
      h('thead', {}, h('tr', {}, ...head.map((c, i) => h('th', { scope: 'col', class: cls(i) }, c)))),
      h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c, i) => h('td', { class: cls(i) }, c))))),
    ),
  );
}

function facts(items: readonly [string, Child][]) {
  return h('dl', { class: 'facts' }, ...items.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function chips(values: readonly string[]) {
  if (values.length === 0) return h('span', { class: 'muted' }, 'none');
  return h('ul', { class: 'chips' }, ...values.map((v) => h('li', {}, v)));
}

function block(title: string, content: Child, wide = false) {
  return h('section', { class: wide ? 'config-wide' : undefined }, h('h3', {}, title), content);
}

/**
 * The effective configuration in readable form: general settings, tiers, endpoint rules, policy classes,
 * exemptions and identity sources. Values come from `GET /config` (secrets already redacted by the server).
 */
export function renderConfig(host: HTMLElement, c: GatewayConfig): void {
  const tiers = Object.values(c.tiers).map((t) =>
    t.unlimited
      ? [
          h('span', { class: 'mono' }, t.name),
          'unlimited (exempt)',
          '-',
          '-',
          t.name === c.defaultTier ? 'default' : '',
        ]
      : [
          h('span', { class: 'mono' }, t.name),
          count(t.perMinute),
          count(t.burst),
          t.perHour === undefined ? '-' : count(t.perHour),
          t.name === c.defaultTier ? 'default' : '',
        ],
  );
  const rules = c.endpoints.map((r) => [
    h('span', { class: 'mono' }, r.pattern),
    r.methods === undefined ? 'any' : r.methods.join(', '),
    `${count(r.limit)} / ${duration(r.windowSeconds)}`,
    count(r.burst),
    r.className ?? (r.name === r.pattern ? '' : r.name),
  ]);
  const classes = [...Object.values(c.classes), c.identity.publicAuth].map((k) => [
    h('span', { class: 'mono' }, k.name),
    count(k.perMinute),
    count(k.burst),
  ]);
  const id = c.identity;
  const sources: string[] = [];
  if (id.jwt !== undefined) {
    sources.push(
      `JWT (${id.jwt.jwksUrl !== undefined ? 'JWKS URL' : 'JWKS file'}${id.jwt.issuer ? `, issuer ${id.jwt.issuer}` : ''})`,
    );
  }
  if (id.apiKeys !== undefined) sources.push(`API keys (header ${id.apiKeys.header})`);
  if (id.headers !== undefined)
    sources.push(`identity headers from trusted proxies (${id.headers.tenant}, ${id.headers.client})`);
  const store =
    c.store.type === 'memory'
      ? `memory, at most ${count(c.maxTrackedKeys)} keys, swept every ${duration(Math.round(c.sweepIntervalMs / 1000))}`
      : `redis (${c.store.redis?.clusterNodes !== undefined ? 'cluster' : c.store.redis?.sentinel !== undefined ? 'sentinel' : 'single node'}), timeout ${c.store.timeoutMs} ms`;

  fill(
    host,
    h(
      'div',
      { class: 'config-grid' },
      block(
        'General',
        facts([
          ['Limiting', c.enabled ? 'enabled' : 'disabled (every request is exempt)'],
          ['Default tier', h('span', { class: 'mono' }, c.defaultTier)],
          ['Mode', c.server.mode],
          ['Store', store],
          ['Failure mode', c.store.failureMode],
          ['Headers', c.headers.mode],
          ['Key prefix', h('span', { class: 'mono' }, c.keys.prefix === '' ? '(none)' : c.keys.prefix)],
          ['Metrics', c.metrics.enabled ? `/metrics, prefix ${c.metrics.prefix}` : 'disabled'],
        ]),
      ),
      block(
        'Identity and clients',
        facts([
          ['Identity sources', sources.length === 0 ? 'none (clients keyed by IP)' : sources.join('; ')],
          ['Trusted proxies', chips(c.server.trustedProxies)],
          ['Client IP header', c.server.proxyHeader],
          ['Upstream', h('span', { class: 'mono' }, c.upstream.url ?? '(none)')],
        ]),
      ),
      block(
        'Tiers',
        table('Tiers and their limits', ['Tier', 'Per minute', 'Burst', 'Per hour', ''], tiers, [1, 2, 3]),
      ),
      block(
        'Exemptions',
        facts([
          ['Endpoints', chips(c.exemptions.endpoints)],
          ['mTLS subjects', chips(c.exemptions.mtlsSubjects ?? [])],
          [
            'Loopback',
            c.exemptions.loopbackInDevelopment
              ? c.server.mode === 'development'
                ? 'exempt (development mode)'
                : 'exempt in development mode only (not active)'
              : 'not exempt',
          ],
          [
            'Tiers',
            chips(
              Object.values(c.tiers)
                .filter((t) => t.unlimited)
                .map((t) => t.name),
            ),
          ],
        ]),
      ),
      block(
        'Endpoint rules',
        table(
          'Endpoint rules, checked with the tier limits',
          ['Pattern', 'Methods', 'Limit', 'Burst', 'Class or name'],
          rules,
          [3],
          [4],
        ),
        true,
      ),
      block(
        'Policy classes',
        table('Policy classes', ['Class', 'Per minute', 'Burst'], classes, [1, 2]),
        true,
      ),
    ),
  );
}
