import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { describeEffect, type OverrideRule } from 'sluice';
import { DURATION_EXAMPLES, durationMs } from '../config/duration.js';
import { printable } from '../replay/report-text.js';
import { adminJson, idOf, listOf, NotAdminAnswer, TokenRefused } from './admin-answer.js';
import { timeLeft, untilIssue } from './time-left.js';
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
                      [--policy NAME | --tier NAME] [--for 7d | --until ISO-TIME] --reason TEXT
  sluice override list [--json]
  sluice override rm ID [--reason TEXT]
  sluice override history [--json]
  sluice block set PATTERN [--status 403|429] [--policy NAME | --tier NAME] [--for 1h | --until ISO-TIME] --reason TEXT
  sluice block list [--json]
  sluice block rm ID [--reason TEXT]

PATTERN: an exact key (tenant:acme:client:web, ip:203.0.113.9, apikey:<hash>), a tenant (tenant:acme),
a prefix ending in * (tenant:acme:client:*), an address range (ip:10.0.0.0/8; a single IPv6 address such as
ip:2001:db8::1 is its /128) or an API key of the key file by name (apikey-name:ci-bot). An address is stored as
the client's key (ip:::ffff:1.2.3.4 as ip:1.2.3.4). A name holding ":" or "%" is written as keys write it
(tenant:org%3Aacme for the tenant org:acme); a pattern no key can match is refused. Quote a pattern with *
('tenant:acme:client:*') so that the shell does not replace it with file names. Durations: ${DURATION_EXAMPLES}.
ISO-TIME: a date-time with Z or an offset from UTC (2030-01-01T00:00:00Z, 2030-01-01T02:00:00+02:00); one
without them is refused, since the gateway would read it in its own local time.
ID: the pattern as stored, then " policy=NAME" or " tier=NAME" when scoped (as "sluice override list" shows it).
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
    io.err(`sluice ${kind}: ${(e as Error).message}\n${tryHelp(kind)}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const repeated = repeatedOption(parsed.tokens);
  if (repeated !== undefined)
    return usage(io, kind, `--${repeated} is given more than once: give it once, with the value meant`);
  if (values.help === true) {
    io.out(OVERRIDE_HELP);
    return 0;
  }
  const [action, target] = positionals;
  const wrong = argumentIssue(kind, positionals) ?? optionIssue(kind, action, values);
  if (wrong !== undefined) return usage(io, kind, wrong);
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
    if (r.status === 401) throw new TokenRefused();
    return [r.status, text === '' ? {} : adminJson(text)];
  };
  try {
    switch (action) {
      case 'set': {
        if (target === undefined) return usage(io, kind, `${kind} set needs a PATTERN`);
        const body = bodyOf(kind, target, values);
        if (typeof body === 'string') return usage(io, kind, body);
        const [status, reply] = await call('PUT', '/overrides', body);
        return report(io, kind, status, reply, () => `set ${idOf(reply.override)}\n`);
      }
      case 'list': {
        const [status, reply] = await call('GET', kind === 'block' ? '/blocks' : '/overrides');
        return report(io, kind, status, reply, () => {
          const rules = listOf<Record<string, unknown>>(reply, kind === 'block' ? 'blocks' : 'overrides');
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
          const changes = listOf<{
            action: string;
            id: string;
            who: string;
            at: number;
            reason: string;
          }>(reply, 'changes');
          if (values.json === true) return `${JSON.stringify(changes, null, 2)}\n`;
          const row = (c: (typeof changes)[number]) =>
            `${new Date(c.at).toISOString()} ${printable(String(c.who))} ${printable(String(c.action))} ${printable(String(c.id))}: ${printable(String(c.reason))}`;
          return `${changes.map(row).join('\n')}\n`;
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
    if (e instanceof TokenRefused) {
      io.err(
        `sluice ${kind}: the admin API at ${base} refused SLUICE_ADMIN_TOKEN (401): set it to the gateway's admin.token\n`,
      );
    } else if (e instanceof NotAdminAnswer) {
      io.err(
        `sluice ${kind}: ${base} answered, but not as the admin API does (${e.message}); set SLUICE_ADMIN_URL or --admin to the admin listener's address (admin.port), not the proxy's\n`,
      );
    } else {
      io.err(`sluice ${kind}: the admin API at ${base} could not be reached: ${(e as Error).message}\n`);
    }
    return 1;
  }
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: joinNegativeValues(argv, OPTIONS),
    allowPositionals: true,
    strict: true,
    tokens: true,
    options: OPTIONS,
  });
}

/**
 * The first option given twice: refused rather than the last one winning, since a repeat is a mistake (a command
 * edited from the shell history, a reason pasted twice) that would otherwise set a rule no one read.
 */
function repeatedOption(tokens: ReturnType<typeof parse>['tokens']): string | undefined {
  const seen = new Set<string>();
  for (const t of tokens) {
    if (t.kind !== 'option') continue;
    if (seen.has(t.name)) return t.name;
    seen.add(t.name);
  }
  return undefined;
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
      return `--for must be a duration such as ${DURATION_EXAMPLES}, got ${JSON.stringify(v.for)}`;
    body.ttlSeconds = Math.round(ms / 1000);
  }
  if (v.until !== undefined) {
    const issue = untilIssue(v.until);
    if (issue !== undefined) return issue;
    body.expiresAt = v.until;
  }
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
  // Numbers go as given (the gateway names one out of range in its answer); text that is no number would be sent
  // as null and refused as "got null", so it is named here.
  for (const name of ['quota', 'burst'] as const) {
    const text = v[name];
    if (text === undefined) continue;
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n))
      return `--${name} must be a number, got ${JSON.stringify(text)}`;
    body[name] = n;
  }
  if (v.window !== undefined) {
    const ms = durationMs(/^[0-9]+$/.test(v.window) ? Number(v.window) : v.window);
    body.window = ms === undefined ? v.window : ms / 1000;
  }
  return body;
}

/** The positionals each action takes after its name, as the help names them. */
const ARGUMENT_OF: Readonly<Record<string, string | undefined>> = Object.freeze({
  set: 'PATTERN',
  rm: 'ID',
  list: undefined,
  history: undefined,
});

/**
 * Arguments past the one an action takes: named rather than ignored, since they are a mistake (a pattern with
 * spaces, a missing quote) or a `*` the shell replaced with the file names of the folder.
 */
function argumentIssue(kind: string, positionals: readonly string[]): string | undefined {
  const [action, target] = positionals;
  if (action === undefined || !Object.hasOwn(ARGUMENT_OF, action)) return undefined;
  const takes = ARGUMENT_OF[action];
  const extra = positionals.slice(takes === undefined ? 1 : 2);
  if (extra.length > 0) {
    const named = extra.map((a) => JSON.stringify(a)).join(', ');
    const quote =
      action === 'set'
        ? "; quote a pattern with * ('tenant:acme:client:*'), or the shell replaces it with file names"
        : '';
    return `${kind} ${action} takes ${takes === undefined ? 'no argument' : `one ${takes}`}; unexpected ${named}${quote}`;
  }
  // A pattern that is a file here is most likely what the shell made of a `*`: with one match the shell hands over
  // a single argument, and a file may well be named like a key (`tenant:acme:client:web` for
  // `tenant:acme:client:*`), so a ":" in it proves nothing.
  if (action === 'set' && target !== undefined && !target.endsWith('*') && existsSync(target)) {
    const colon = target.lastIndexOf(':');
    const quoted = colon < 0 ? "'ip:*', 'tenant:acme:client:*'" : `'${target.slice(0, colon + 1)}*'`;
    return `PATTERN ${JSON.stringify(target)} is a file name here: the shell replaces an unquoted * with file names; quote the pattern (${quoted}), or for this exact key run the command in a folder without such a file`;
  }
  return undefined;
}

/** The options each action reads (`--admin` and `--help` apply to every one). */
const OPTIONS_OF: Readonly<Record<string, readonly (keyof typeof OPTIONS)[]>> = Object.freeze({
  'override set': ['policy', 'tier', 'quota', 'burst', 'window', 'unlimited', 'for', 'until', 'reason'],
  'block set': ['policy', 'tier', 'status', 'for', 'until', 'reason'],
  list: ['json'],
  history: ['json'],
  rm: ['reason'],
});

/** Options together that contradict each other, with why. */
const EXCLUSIVE: readonly [keyof typeof OPTIONS, keyof typeof OPTIONS, string][] = [
  ['policy', 'tier', ': a rule applies to one policy or one tier'],
  ['for', 'until', ': a rule ends after --for or at --until'],
];

/**
 * Options that the action does not read, or that contradict each other: refused as the admin API refuses such a
 * body, rather than dropped (`--unlimited --quota 5` must not set an unlimited rule without a word).
 */
function optionIssue(kind: 'override' | 'block', action: string | undefined, v: Values): string | undefined {
  if (action === undefined) return undefined;
  const allowed = OPTIONS_OF[action === 'set' ? `${kind} set` : action];
  if (allowed === undefined) return undefined;
  const given = (Object.keys(OPTIONS) as (keyof typeof OPTIONS)[]).filter(
    (o) => v[o] !== undefined && o !== 'admin' && o !== 'help',
  );
  const stray = given.filter((o) => !allowed.includes(o));
  if (stray.length > 0) {
    const names = stray.map((o) => `--${o}`).join(', ');
    const other = kind === 'override' ? 'block' : 'override';
    const elsewhere =
      action === 'set' && stray.every((o) => OPTIONS_OF[`${other} set`]?.includes(o))
        ? ` (${stray.length === 1 ? 'it is' : 'they are'} for sluice ${other} set)`
        : '';
    return `${names} ${stray.length === 1 ? 'does' : 'do'} not apply to sluice ${kind} ${action}${elsewhere}`;
  }
  const sizes = given.filter((o) => o === 'quota' || o === 'window' || o === 'burst');
  if (v.unlimited === true && sizes.length > 0) {
    return `--unlimited cannot be combined with ${sizes.map((o) => `--${o}`).join(', ')}: an unlimited rule has no quota, window or burst`;
  }
  for (const [a, b, why] of EXCLUSIVE) {
    if (v[a] !== undefined && v[b] !== undefined) return `--${a} and --${b} cannot be combined${why}`;
  }
  return undefined;
}

function line(r: Record<string, unknown>): string {
  const what = describeEffect(r as unknown as OverrideRule);
  const seconds = r.expiresInSeconds === undefined ? undefined : Number(r.expiresInSeconds);
  const left = seconds === undefined ? 'no end' : seconds <= 0 ? 'ended' : `${timeLeft(seconds)} left`;
  // Ids, authors and reasons come from the store, which other gateways and older versions write: escaped, so a
  // control character cannot rewrite the terminal or fake a row.
  return `${printable(String(r.id))}\t${what}\t${left}\t${printable(String(r.author))}: ${printable(String(r.reason))}`;
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

/** A usage error: the one thing wrong, and where the whole usage is (not the usage itself, which buries it). */
function usage(io: OverrideCommandIo, kind: string, message: string): number {
  io.err(`sluice ${kind}: ${message}\n${tryHelp(kind)}`);
  return 2;
}

const tryHelp = (kind: string) => `Run "sluice ${kind} --help" for the actions and options.\n`;
