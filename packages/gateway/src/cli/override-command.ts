import { parseArgs } from 'node:util';
import { describeEffect, type OverrideRule } from 'sluice';
import { durationMs } from '../config/duration.js';
import { joinNegativeValues } from './usage-hints.js';

/** Where the command writes and how it reaches the admin API; replaceable in tests. */
export interface OverrideCommandIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** The environment (`SLUICE_ADMIN_URL`, `SLUICE_ADMIN_TOKEN`). */
  readonly env: Readonly<Record<string, string | undefined>>;
}

const OPTIONS = {
  admin: { type: 'string' },
  policy: { type: 'string' },
  tier: { type: 'string' },
  quota: { type: 'string' },
  burst: { type: 'string' },
  window: { type: 'string' },
  unlimited: { type: 'boolean' },
  status: { type: 'string' },
  for: { type: 'string' },
  until: { type: 'string' },
  reason: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The text of `sluice override --help`. */
export const OVERRIDE_HELP = `Usage:
  sluice override set PATTERN (--quota N --window 60s [--burst N] | --unlimited)
                      [--policy NAME | --tier NAME] [--for 1h | --until ISO-TIME] --reason TEXT
  sluice override list [--json]
  sluice override rm ID [--reason TEXT]
  sluice override history [--json]
  sluice block set PATTERN [--status 403|429] [--policy NAME | --tier NAME] [--for 1h | --until ISO-TIME] --reason TEXT
  sluice block list [--json]
  sluice block rm ID [--reason TEXT]

PATTERN: an exact key (tenant:acme:client:web, ip:203.0.113.9, apikey:<hash>), a tenant (tenant:acme),
a prefix ending in * (tenant:acme:client:*), an address range (ip:10.0.0.0/8; a single IPv6 address such as
ip:2001:db8::1 is its /128) or an API key of the key file by name (apikey-name:ci-bot). An address is stored as
the client's key (ip:::ffff:1.2.3.4 as ip:1.2.3.4). ID: the pattern as stored, then
" policy=NAME" or " tier=NAME" when scoped (as "sluice override list" shows it).
The admin API is SLUICE_ADMIN_URL (or --admin URL, default http://127.0.0.1:9091) with the token in
SLUICE_ADMIN_TOKEN (never on the command line, where other users could read it).
`;

/**
 * `sluice override ...` and `sluice block ...`: run-time overrides and blocks through the admin API of a running
 * gateway (with Redis, every gateway on it applies the change within a second).
 *
 * @param kind - `override` or `block`.
 * @param argv - the arguments after the command name.
 * @param io - output, environment.
 * @returns the exit code: 0 done, 1 refused by the gateway or unreachable, 2 usage error.
 */
export async function overrideCommand(
  kind: 'override' | 'block',
  argv: readonly string[],
  io: OverrideCommandIo,
): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (e) {
    io.err(`sluice ${kind}: ${(e as Error).message}\n${OVERRIDE_HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    io.out(OVERRIDE_HELP);
    return 0;
  }
  const [action, target] = positionals;
  const base = (values.admin ?? io.env.SLUICE_ADMIN_URL ?? 'http://127.0.0.1:9091').replace(/\/+$/, '');
  const token = io.env.SLUICE_ADMIN_TOKEN;
  if (token === undefined || token === '') {
    io.err(`sluice ${kind}: set SLUICE_ADMIN_TOKEN to the gateway's admin.token\n`);
    return 2;
  }
  const call = async (
    method: string,
    path: string,
    body?: unknown,
  ): Promise<[number, Record<string, unknown>]> => {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await r.text();
    return [r.status, text === '' ? {} : (JSON.parse(text) as Record<string, unknown>)];
  };
  try {
    switch (action) {
      case 'set': {
        if (target === undefined) return usage(io, kind, `${kind} set needs a PATTERN`);
        const body = bodyOf(kind, target, values);
        if (typeof body === 'string') return usage(io, kind, body);
        const [status, reply] = await call('PUT', '/overrides', body);
        return report(io, kind, status, reply, () => `set ${(reply.override as { id: string }).id}\n`);
      }
      case 'list': {
        const [status, reply] = await call('GET', kind === 'block' ? '/blocks' : '/overrides');
        return report(io, kind, status, reply, () => {
          const rules = (reply.overrides ?? reply.blocks) as Record<string, unknown>[];
          if (values.json === true) return `${JSON.stringify(rules, null, 2)}\n`;
          return rules.length === 0 ? 'none\n' : `${rules.map(line).join('\n')}\n`;
        });
      }
      case 'rm': {
        if (target === undefined) return usage(io, kind, `${kind} rm needs the ID`);
        const q = `id=${encodeURIComponent(target)}&reason=${encodeURIComponent(values.reason ?? 'removed')}`;
        const [status, reply] = await call('DELETE', `/overrides?${q}`);
        return report(io, kind, status, reply, () => `removed ${target}\n`);
      }
      case 'history': {
        const [status, reply] = await call('GET', '/overrides/history');
        return report(io, kind, status, reply, () => {
          const changes = reply.changes as {
            action: string;
            id: string;
            who: string;
            at: number;
            reason: string;
          }[];
          if (values.json === true) return `${JSON.stringify(changes, null, 2)}\n`;
          return `${changes.map((c) => `${new Date(c.at).toISOString()} ${c.who} ${c.action} ${c.id}: ${c.reason}`).join('\n')}\n`;
        });
      }
      default:
        return usage(
          io,
          kind,
          action === undefined ? `${kind} needs set, list, rm or history` : `unknown action "${action}"`,
        );
    }
  } catch (e) {
    io.err(`sluice ${kind}: the admin API at ${base} could not be reached: ${(e as Error).message}\n`);
    return 1;
  }
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: joinNegativeValues(argv, OPTIONS),
    allowPositionals: true,
    strict: true,
    options: OPTIONS,
  });
}

type Values = ReturnType<typeof parse>['values'];

/** The request body of a `set`, or a usage message. */
function bodyOf(kind: 'override' | 'block', pattern: string, v: Values): Record<string, unknown> | string {
  const body: Record<string, unknown> = { pattern, reason: v.reason };
  if (v.reason === undefined) return '--reason TEXT is required (it goes to the audit log)';
  if (v.policy !== undefined) body.policy = v.policy;
  if (v.tier !== undefined) body.tier = v.tier;
  if (v.for !== undefined) {
    const ms = durationMs(v.for);
    if (ms === undefined || ms < 1000)
      return `--for must be a duration such as 30m or 1h, got ${JSON.stringify(v.for)}`;
    body.ttlSeconds = Math.round(ms / 1000);
  }
  if (v.until !== undefined) body.expiresAt = v.until;
  if (kind === 'block') {
    const status = v.status === undefined ? 403 : Number(v.status);
    if (status !== 403 && status !== 429)
      return `--status must be 403 or 429, got ${JSON.stringify(v.status)}`;
    body.block = status;
    return body;
  }
  if (v.unlimited === true) {
    body.unlimited = true;
    return body;
  }
  // Numbers go as given: the gateway names a bad one in its answer.
  if (v.quota !== undefined) body.quota = Number(v.quota);
  if (v.burst !== undefined) body.burst = Number(v.burst);
  if (v.window !== undefined) {
    const ms = durationMs(/^[0-9]+$/.test(v.window) ? Number(v.window) : v.window);
    body.window = ms === undefined ? v.window : ms / 1000;
  }
  return body;
}

function line(r: Record<string, unknown>): string {
  const what = describeEffect(r as unknown as OverrideRule);
  const left = r.expiresInSeconds === undefined ? 'no end' : `${r.expiresInSeconds}s left`;
  return `${r.id}\t${what}\t${left}\t${r.author}: ${r.reason}`;
}

function report(
  io: OverrideCommandIo,
  kind: string,
  status: number,
  reply: Record<string, unknown>,
  ok: () => string,
): number {
  if (status >= 200 && status < 300) {
    io.out(ok());
    return 0;
  }
  const field = typeof reply.field === 'string' ? ` (${givenBy(reply.field)})` : '';
  io.err(`sluice ${kind}: ${status} ${String(reply.detail ?? reply.error ?? 'refused')}${field}\n`);
  return 1;
}

/** The admin API's request fields and the options of this command that give them. */
const OPTION_OF: Readonly<Record<string, string>> = Object.freeze({
  pattern: 'given as PATTERN',
  reason: 'given by --reason',
  policy: 'given by --policy',
  tier: 'given by --tier',
  quota: 'given by --quota',
  burst: 'given by --burst',
  window: 'given by --window',
  unlimited: 'given by --unlimited',
  block: 'given by --status',
  ttlSeconds: 'given by --for',
  expiresAt: 'given by --for or --until',
});

/** Where the refused field came from: the option that gives it, else the API's name for it. */
function givenBy(field: string): string {
  return Object.hasOwn(OPTION_OF, field) ? (OPTION_OF[field] as string) : `field ${field}`;
}

function usage(io: OverrideCommandIo, kind: string, message: string): number {
  io.err(`sluice ${kind}: ${message}\n${OVERRIDE_HELP}`);
  return 2;
}
