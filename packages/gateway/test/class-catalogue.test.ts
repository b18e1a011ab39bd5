import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KEY_KINDS } from 'sluice/http';
import { afterAll, describe, expect, it } from 'vitest';
import { requirementFixture } from '../../../test/support/requirements.js';
import { main } from '../src/cli/main.js';
import { CLASS_CATALOGUES } from '../src/config/class-catalogue.js';
import { loadConfigText } from '../src/config/load-config.js';
import { configSchema } from '../src/config/schema.js';
import type { Violation } from '../src/config/violation.js';
import { tempDir } from './support.js';

// The class table lives with the other policy class settings in the tiers and endpoint rules guide.
const README = fileURLToPath(new URL('../../../docs/guide/tiers-and-endpoint-rules.md', import.meta.url));
const tmp = tempDir();
afterAll(() => tmp.cleanup());

const BASE = `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 300, burstLimit: 50 }
`;

function violations(yaml: string): Violation[] {
  const r = loadConfigText(yaml, join(tmp.dir, 'c.yaml'));
  expect(r.ok).toBe(false);
  return [...r.violations];
}

function load(yaml: string) {
  const r = loadConfigText(yaml, join(tmp.dir, 'c.yaml'));
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
}

/** The rows of the first markdown table after `heading`, as arrays of cell texts (backticks removed). */
function tableAfter(markdown: string, heading: string): string[][] {
  const start = markdown.indexOf(heading);
  expect(start, `the guide has the heading ${heading}`).toBeGreaterThanOrEqual(0);
  const lines = markdown.slice(start).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim().replaceAll('`', '')),
    );
  }
  return rows;
}

const STANDARD = CLASS_CATALOGUES.standard;

/** `ratelimit` lines giving every class of a catalogue the same limits. */
function catalogueLimitsYaml(name: keyof typeof CLASS_CATALOGUES, perMinute: number, burst: number): string {
  return CLASS_CATALOGUES[name]
    .map((c) => `  ${c.name}: { per_minute: ${perMinute}, burst: ${burst} }\n`)
    .join('');
}

describe('the standard class catalogue', () => {
  it('holds the 17 classes of the design document with their key kinds and scopes', () => {
    expect(STANDARD.map((c) => [c.name, c.key, c.scope])).toEqual([
      ['rl.public_auth', 'ip', 'request'],
      ['rl.gateway_connect', 'device', 'connection'],
      ['rl.read', 'principal', 'request'],
      ['rl.write', 'principal', 'request'],
      ['rl.message', 'principal', 'request'],
      ['rl.trigger', 'principal', 'request'],
      ['rl.interaction', 'principal', 'request'],
      ['rl.upload', 'principal', 'request'],
      ['rl.search', 'principal', 'request'],
      ['rl.admin', 'principal', 'request'],
      ['rl.export', 'principal', 'request'],
      ['rl.import', 'principal', 'request'],
      ['rl.agent_runtime', 'agent', 'request'],
      ['rl.typing', 'connection', 'connection'],
      ['rl.webhook_in', 'webhook', 'request'],
      ['rl.terminal', 'human', 'request'],
      ['rl.host', 'host', 'request'],
    ]);
    for (const c of STANDARD) expect(KEY_KINDS).toContain(c.key);
    expect(Object.isFrozen(STANDARD)).toBe(true);
  });

  it('names every class of the requirements (read from their fixture, no hard-coded count)', () => {
    const named = requirementFixture('rate-limit-classes.txt').trim().split('\n');
    expect(named.length).toBeGreaterThan(0);
    expect(named).toEqual(STANDARD.map((c) => c.name).sort());
  });

  it('matches the class table of the tiers and endpoint rules guide', () => {
    const rows = tableAfter(readFileSync(README, 'utf8'), '### The `standard` class catalogue');
    expect(rows.map((r) => [r[0], r[1], r[2]])).toEqual(STANDARD.map((c) => [c.name, c.key, c.scope]));
  });

  it('offers the same key kinds and catalogues in the schema as in the code', () => {
    const schema = configSchema() as {
      properties: { ratelimit: { properties: { catalogue: { enum: string[] } } } };
      definitions: { rateClass: { properties: { key: { enum: string[] }; scope: { enum: string[] } } } };
    };
    expect(schema.definitions.rateClass.properties.key.enum).toEqual([...KEY_KINDS]);
    expect(schema.definitions.rateClass.properties.scope.enum).toEqual(['request', 'connection']);
    expect(schema.properties.ratelimit.properties.catalogue.enum).toEqual(Object.keys(CLASS_CATALOGUES));
  });

  it('loads with limits for every class; key kinds and scopes come from the catalogue', () => {
    const c = load(`${BASE}ratelimit:
  catalogue: standard
${catalogueLimitsYaml('standard', 120, 30)}`);
    expect(Object.keys(c.classes).sort()).toEqual(STANDARD.map((x) => x.name).sort());
    expect(c.classes['rl.webhook_in']).toEqual({
      name: 'rl.webhook_in',
      perMinute: 120,
      burst: 30,
      key: 'webhook',
      scope: 'request',
    });
    expect(c.classes['rl.typing']).toMatchObject({ key: 'connection', scope: 'connection' });
    expect(c.identity.publicAuth).toMatchObject({ name: 'rl.public_auth', key: 'ip' });
  });
});

describe('classes with a key kind and a scope', () => {
  it('default to the caller key and the request scope, and take key and scope from YAML', () => {
    const c = load(`${BASE}ratelimit:
  rl.plain: { per_minute: 60, burst: 10 }
  rl.orgs: { per_minute: 60, burst: 10, key: tenant-client, scope: request }
  rl.socket: { per_minute: 60, burst: 10, key: connection, scope: connection }
`);
    expect(c.classes['rl.plain']).toMatchObject({ key: 'caller', scope: 'request' });
    expect(c.classes['rl.orgs']).toMatchObject({ key: 'tenant-client', scope: 'request' });
    expect(c.classes['rl.socket']).toMatchObject({ key: 'connection', scope: 'connection' });
  });

  it('refuses an unknown key kind and scope with their lines', () => {
    const v = violations(`${BASE}ratelimit:
  rl.x: { per_minute: 60, burst: 10, key: cookie, scope: session }
`);
    expect(v.map((x) => `${x.line}:${x.column} ${x.path}`)).toEqual([
      '6:43 ratelimit["rl.x"].key',
      '6:58 ratelimit["rl.x"].scope',
    ]);
    expect(v[0].message).toMatch(/must be one of "ip", "principal"/);
  });
});

describe('start checks of the catalogue', () => {
  it('names every catalogue class without limits at the catalogue line', () => {
    const limits = catalogueLimitsYaml('standard', 60, 10)
      .split('\n')
      .filter((l) => !l.includes('rl.host') && !l.includes('rl.terminal'))
      .join('\n');
    const v = violations(`${BASE}ratelimit:
  catalogue: standard
${limits}`);
    expect(v.map((x) => `${x.line}:${x.column} ${x.path}: ${x.message}`)).toEqual([
      '6:14 ratelimit.catalogue: class "rl.terminal" of catalogue "standard" has no limits: add ratelimit.rl.terminal.per_minute and .burst',
      '6:14 ratelimit.catalogue: class "rl.host" of catalogue "standard" has no limits: add ratelimit.rl.host.per_minute and .burst',
    ]);
  });

  it('refuses a class used by an endpoint rule that has no limits, next to the catalogue', () => {
    const v = violations(`${BASE}  endpoints:
    - { pattern: /search, class: rl.serch }
ratelimit:
  catalogue: standard
${catalogueLimitsYaml('standard', 60, 10)}`);
    expect(v.map((x) => `${x.line}:${x.column} ${x.path}`)).toEqual(['6:34 rateLimiting.endpoints[0].class']);
    expect(v[0].message).toMatch(/class "rl.serch" is not configured.*did you mean "rl.search"/);
  });

  it('fails an endpoint rule naming a connection-scoped class with its path and line:column', () => {
    const v = violations(`${BASE}  endpoints:
    - { pattern: /typing, class: rl.typing }
    - { pattern: /read, class: rl.read }
    - pattern: /connect
      class: rl.gateway_connect
ratelimit:
  catalogue: standard
${catalogueLimitsYaml('standard', 60, 10)}`);
    expect(v.map((x) => `${x.line}:${x.column} ${x.path}: ${x.message}`)).toEqual([
      '6:34 rateLimiting.endpoints[0].class: class "rl.typing" is connection-scoped (one bucket per gateway connection, taken when the connection is set up): an endpoint rule limits HTTP requests and cannot name it',
      '9:14 rateLimiting.endpoints[2].class: class "rl.gateway_connect" is connection-scoped (one bucket per gateway connection, taken when the connection is set up): an endpoint rule limits HTTP requests and cannot name it',
    ]);
  });

  it('fails a connection-scoped class of the user too, and as the public-auth class', () => {
    const v = violations(`${BASE}  endpoints:
    - { pattern: /ws, class: rl.socket }
ratelimit:
  rl.socket: { per_minute: 60, burst: 10, key: connection, scope: connection }
identity:
  publicAuthClass: rl.socket
`);
    expect(v.map((x) => `${x.line}:${x.column} ${x.path}`)).toEqual([
      '6:30 rateLimiting.endpoints[0].class',
      '10:20 identity.publicAuthClass',
    ]);
  });

  it('keeps the key kind and scope of a catalogue class: another value is a violation', () => {
    const v = violations(`${BASE}ratelimit:
  catalogue: standard
${catalogueLimitsYaml('standard', 60, 10).replace('rl.read: { per_minute: 60, burst: 10 }', 'rl.read: { per_minute: 60, burst: 10, key: ip }')}`);
    expect(v.map((x) => `${x.path}: ${x.message}`)).toEqual([
      'ratelimit["rl.read"].key: class "rl.read" is keyed by principal in catalogue "standard"; name a class of your own for another key kind',
    ]);
    const same = load(`${BASE}ratelimit:
  catalogue: standard
${catalogueLimitsYaml('standard', 60, 10).replace('rl.read: { per_minute: 60, burst: 10 }', 'rl.read: { per_minute: 60, burst: 10, key: principal, scope: request }')}`);
    expect(same.classes['rl.read']).toMatchObject({ key: 'principal' });
  });

  it('refuses an unknown catalogue with the catalogues there are', () => {
    const v = violations(`${BASE}ratelimit:
  catalogue: standrd
`);
    expect(v.map((x) => `${x.line}:${x.column} ${x.path}`)).toEqual(['6:14 ratelimit.catalogue']);
    expect(v[0].message).toMatch(/"standard"/);
  });

  it('are what sluice validate prints, as file:line:column', async () => {
    const file = join(tmp.dir, 'typing.yaml');
    writeFileSync(
      file,
      `${BASE}  endpoints:
    - { pattern: /typing, class: rl.typing }
ratelimit:
  catalogue: standard
${catalogueLimitsYaml('standard', 60, 10)}`,
    );
    const err: string[] = [];
    const io = { out: () => undefined, err: (t: string) => err.push(t), onSignal: () => () => undefined };
    expect(await main(['validate', file], io)).toBe(1);
    expect(err.join('')).toContain(
      `${file}:6:34 rateLimiting.endpoints[0].class: class "rl.typing" is connection-scoped`,
    );
  });
});
