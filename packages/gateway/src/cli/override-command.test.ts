import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { OVERRIDE_HELP, overrideCommand } from './override-command.js';

/** The requests the command sent, and the answer each got. */
let sent: { method: string; url: string; body: unknown }[];
/** The answer to every request: `body` as JSON, or `text` as it is (a server that is not the admin API). */
let answer: { status: number; body: unknown; text?: string };

beforeEach(() => {
  sent = [];
  answer = { status: 200, body: { override: { id: 'x' } } };
  vi.stubGlobal('fetch', async (url: string, init: { method: string; body?: string }) => {
    sent.push({
      method: init.method,
      url,
      body: init.body === undefined ? undefined : JSON.parse(init.body),
    });
    return new Response(answer.text ?? JSON.stringify(answer.body), { status: answer.status });
  });
});
afterEach(() => {
  vi.unstubAllGlobals();
});

/** Runs `sluice override` or `sluice block` against the admin API at `adminUrl`: exit code, output, errors. */
async function runAt(adminUrl: string, kind: 'override' | 'block', ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await overrideCommand(kind, argv, {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    env: { SLUICE_ADMIN_URL: adminUrl, SLUICE_ADMIN_TOKEN: 'token' },
  });
  return { code, out: out.join(''), err: err.join('').replace(OVERRIDE_HELP, '') };
}

const run = (kind: 'override' | 'block', ...argv: string[]) => runAt('http://admin.test', kind, ...argv);

/** Answers every request with this status and body text, as a server that is not the admin API would. */
function answerWith(status: number, text: string): void {
  answer = { status, body: undefined, text };
}

describe('sluice override set and sluice block set: arguments', () => {
  it('refuses arguments after PATTERN, naming them and suggesting quotes for a * pattern', async () => {
    const r = await run('override', 'set', 'foo', 'bar', 'baz', '--unlimited', '--reason', 'x');
    expect(r.code).toBe(2);
    expect(r.err).toContain('sluice override: override set takes one PATTERN; unexpected "bar", "baz"');
    expect(r.err).toContain("quote a pattern with * ('tenant:acme:client:*')");
    expect(sent).toEqual([]);
    const rm = await run('block', 'rm', 'ip:192.0.2.1', 'ip:192.0.2.2');
    expect(rm.code).toBe(2);
    expect(rm.err).toContain('block rm takes one ID; unexpected "ip:192.0.2.2"');
    expect((await run('override', 'list', 'all')).err).toContain(
      'override list takes no argument; unexpected "all"',
    );
  });

  it('names a PATTERN that is a file here: the shell expanded an unquoted *', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-cli-'));
    try {
      // The shell hands over the names as they are found, relative or not; an absolute one needs no chdir here.
      const file = join(dir, 'access.log');
      writeFileSync(file, '');
      const r = await run('block', 'set', file, '--reason', 'x');
      expect(r.code).toBe(2);
      expect(r.err).toContain(`PATTERN ${JSON.stringify(file)} is a file name here`);
      expect(r.err).toContain("'ip:*'");
      expect(sent).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names a PATTERN with ":" that is a file here: the shell expanded tenant:acme:client:* to it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-cli-'));
    try {
      const file = join(dir, 'tenant:acme:client:web');
      writeFileSync(file, '');
      const r = await run('block', 'set', file, '--reason', 'x');
      expect(r.code).toBe(2);
      expect(r.err).toContain(`PATTERN ${JSON.stringify(file)} is a file name here`);
      expect(r.err).toContain(`'${dir}/tenant:acme:client:*'`);
      expect(sent).toEqual([]);
      // A pattern that names no file goes through, ":" or not.
      const ok = await run('block', 'set', 'tenant:acme:client:web', '--reason', 'x');
      expect(ok.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    [
      ['override', 'set', 'k', '--unlimited', '--quota', '5', '--window', '1m'],
      '--unlimited cannot be combined with --quota, --window',
    ],
    [['override', 'set', 'k', '--unlimited', '--burst', '5'], '--unlimited cannot be combined with --burst'],
    [
      ['override', 'set', 'k', '--status', '429', '--quota', '5', '--window', '1m'],
      '--status does not apply to sluice override set (it is for sluice block set)',
    ],
    [
      ['block', 'set', 'k', '--quota', '5', '--window', '1m'],
      '--quota, --window do not apply to sluice block set (they are for sluice override set)',
    ],
    [
      ['block', 'set', 'k', '--unlimited'],
      '--unlimited does not apply to sluice block set (it is for sluice override set)',
    ],
    [
      ['override', 'set', 'k', '--unlimited', '--policy', 'p', '--tier', 't'],
      '--policy and --tier cannot be combined: a rule applies to one policy or one tier',
    ],
    [
      ['block', 'set', 'k', '--for', '1h', '--until', '2030-01-01T00:00:00Z'],
      '--for and --until cannot be combined',
    ],
    [['override', 'list', '--reason', 'x'], '--reason does not apply to sluice override list'],
    [['block', 'rm', 'k', '--json'], '--json does not apply to sluice block rm'],
  ])('refuses conflicting options %j with exit 2', async (argv, message) => {
    const [kind, ...rest] = argv;
    const r = await run(
      kind as 'override' | 'block',
      ...rest,
      ...(rest.includes('--reason') || rest[0] !== 'set' ? [] : ['--reason', 'x']),
    );
    expect(r.err).toContain(message);
    expect(r.code).toBe(2);
    expect(sent).toEqual([]);
  });

  it('reads --for and --window in days, as the README example does', async () => {
    const r = await run(
      'override',
      'set',
      'tenant:acme',
      '--policy',
      'standard',
      '--quota',
      '600',
      '--window',
      '1m',
      '--for',
      '7d',
      '--reason',
      'launch week',
    );
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(sent[0].body).toEqual({
      pattern: 'tenant:acme',
      policy: 'standard',
      quota: 600,
      window: 60,
      ttlSeconds: 604_800,
      reason: 'launch week',
    });
    await run('override', 'set', 'tenant:acme', '--quota', '5', '--window', '1d', '--reason', 'x');
    expect(sent[1].body).toMatchObject({ window: 86_400 });
    const bad = await run('override', 'set', 'tenant:acme', '--unlimited', '--for', '7w', '--reason', 'x');
    expect(bad.err).toContain('--for must be a duration such as 500ms, 60s, 5m, 1h, 7d, got "7w"');
  });
});

describe('sluice override set --until', () => {
  it('sends a date-time with Z or an offset as given', async () => {
    for (const until of [
      '2030-01-01T00:00:00Z',
      '2030-01-01T02:00:00+02:00',
      '2030-01-01T00:00:00.5-05:30',
    ]) {
      const r = await run('block', 'set', 'ip:192.0.2.1', '--until', until, '--reason', 'x');
      expect(r, until).toMatchObject({ code: 0, err: '' });
      expect(sent.at(-1)?.body).toMatchObject({ expiresAt: until });
    }
  });

  it.each(['2030-01-01T00:00:00', '2030-01-01T00:00', '2030-01-01 00:00:00', '2030-01-01'])(
    'refuses %j, a time without a zone (or a date alone), with exit 2',
    async (until) => {
      const r = await run('block', 'set', 'ip:192.0.2.1', '--until', until, '--reason', 'x');
      expect(r.code).toBe(2);
      expect(r.err).toContain(
        `--until must be a date-time with Z or an offset from UTC, such as 2030-01-01T00:00:00Z or 2030-01-01T02:00:00+02:00, got ${JSON.stringify(until)}`,
      );
      expect(sent).toEqual([]);
    },
  );

  it('refuses a duration or a time that is not one, pointing a duration to --for (which still takes it)', async () => {
    const r = await run('block', 'set', 'ip:192.0.2.1', '--until', '30m', '--reason', 'x');
    expect(r.code).toBe(2);
    expect(r.err).toContain('got "30m" (for a duration, use --for 30m)');
    // A month or a day the calendar does not have is refused, not rolled over to another date.
    for (const until of ['2030-13-45T00:00:00Z', '2030-02-30T00:00:00Z', '2030-01-01T24:00:00Z']) {
      expect((await run('block', 'set', 'ip:192.0.2.1', '--until', until, '--reason', 'x')).code, until).toBe(
        2,
      );
    }
    expect(sent).toEqual([]);
    expect((await run('block', 'set', 'ip:192.0.2.1', '--for', '30m', '--reason', 'x')).code).toBe(0);
    expect(sent[0].body).toMatchObject({ ttlSeconds: 1800 });
  });
});

describe('sluice override list', () => {
  it('shows the time left as the dashboard does', async () => {
    const rule = { id: 'tenant:acme', effect: 'unlimited', author: 'alice', reason: 'promo' };
    answer = {
      status: 200,
      body: {
        overrides: [
          { ...rule, expiresInSeconds: 3591 },
          { ...rule, expiresInSeconds: 9 },
          { ...rule, expiresInSeconds: 7500 },
          { ...rule, expiresInSeconds: 3 * 86400 + 7200 },
          rule,
        ],
      },
    };
    const r = await run('override', 'list');
    expect(r.out.split('\n').map((l) => l.split('\t')[2])).toEqual([
      '59 min 51 s left',
      '9 s left',
      '2 h 05 min left',
      '74 h 00 min left',
      'no end',
      undefined,
    ]);
  });
});

describe('sluice block list and sluice override history: terminal safety', () => {
  // Stored before reasons were checked, or set through another gateway: what is printed is escaped anyway.
  const hostile = 'paid\u001b]0;pwned\u0007\n2026-01-01T00:00:00.000Z root set ip:1.2.3.4: fake\u202e';
  const escaped = 'paid\\x1b]0;pwned\\x07\\x0a2026-01-01T00:00:00.000Z root set ip:1.2.3.4: fake\\u202e';

  it('escapes control and bidirectional characters of ids, authors and reasons in a listing', async () => {
    answer = {
      status: 200,
      body: {
        blocks: [
          {
            id: 'principal:a\tb',
            effect: 'block',
            status: 403,
            author: 'root\u001b[31m',
            reason: hostile,
          },
        ],
      },
    };
    const r = await run('block', 'list');
    expect(r.out).toBe(`principal:a\\x09b\tblock 403\tno end\troot\\x1b[31m: ${escaped}\n`);
  });

  it('escapes them in the history', async () => {
    answer = {
      status: 200,
      body: {
        changes: [
          { action: 'set', id: 'ip:1.2.3.4', who: 'root', at: Date.UTC(2026, 0, 1), reason: hostile },
        ],
      },
    };
    const r = await run('override', 'history');
    expect(r.out).toBe(`2026-01-01T00:00:00.000Z root set ip:1.2.3.4: ${escaped}\n`);
  });
});

describe('sluice override against a server that is not the admin API', () => {
  it('says the server answered, but not as the admin API, for JSON of another shape', async () => {
    answerWith(200, '{"method":"GET","url":"/overrides"}');
    for (const argv of [['list'], ['history']] as const) {
      const r = await runAt('http://proxy.test', 'override', ...argv);
      expect(r.code).toBe(1);
      expect(r.err).toContain('http://proxy.test answered, but not as the admin API');
      expect(r.err).toContain('SLUICE_ADMIN_URL');
      expect(r.err).not.toContain('could not be reached');
      expect(r.err).not.toContain('Cannot read properties');
    }
    const b = await runAt('http://proxy.test', 'block', 'list');
    expect(b.err).toContain('answered, but not as the admin API');
    const s = await runAt(
      'http://proxy.test',
      'override',
      'set',
      'ip:192.0.2.9',
      '--unlimited',
      '--reason',
      'x',
    );
    expect(s.err).toContain('answered, but not as the admin API');
  });

  it('says so for an answer that is not JSON', async () => {
    answerWith(200, '<html>hello</html>');
    const r = await runAt('http://proxy.test', 'override', 'list');
    expect(r.code).toBe(1);
    expect(r.err).toContain('answered, but not as the admin API');
  });

  it('keeps "could not be reached" for a server that does not answer', async () => {
    vi.stubGlobal('fetch', async () => {
      throw new TypeError('fetch failed');
    });
    const r = await runAt('http://proxy.test', 'override', 'list');
    expect(r.code).toBe(1);
    expect(r.err).toContain('could not be reached: fetch failed');
  });
});

describe('sluice override set: numbers', () => {
  it('refuses a --quota or --burst that is not a number before sending anything', async () => {
    answerWith(200, '{"override":{"id":"x"}}');
    const q = await runAt(
      'http://proxy.test',
      'override',
      'set',
      'ip:192.0.2.9',
      '--quota',
      'abc',
      '--window',
      '1m',
      '--reason',
      'x',
    );
    expect(q.code).toBe(2);
    expect(q.err).toContain('--quota must be a number, got "abc"');
    const b = await runAt(
      'http://proxy.test',
      'override',
      'set',
      'ip:192.0.2.9',
      '--quota',
      '5',
      '--burst',
      '',
      '--window',
      '1m',
      '--reason',
      'x',
    );
    expect(b.code).toBe(2);
    expect(b.err).toContain('--burst must be a number, got ""');
    expect(sent).toEqual([]);
  });
});

describe('sluice override and sluice block: short errors', () => {
  it('says the token was refused on a 401, not to send the header it sent', async () => {
    answer = {
      status: 401,
      body: { error: 'unauthorized', detail: 'Send Authorization: Bearer <admin.token>.' },
    };
    const r = await run('override', 'list');
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      "sluice override: the admin API at http://admin.test refused SLUICE_ADMIN_TOKEN (401): set it to the gateway's admin.token\n",
    );
  });

  it('names a missing --reason in one line with a pointer to --help, without the whole usage', async () => {
    const err: string[] = [];
    const code = await overrideCommand('block', ['set', 'ip:192.0.2.1', '--for', '30s'], {
      out: () => {},
      err: (t) => err.push(t),
      env: { SLUICE_ADMIN_URL: 'http://admin.test', SLUICE_ADMIN_TOKEN: 'token' },
    });
    expect(code).toBe(2);
    expect(err.join('')).toBe(
      'sluice block: --reason TEXT is required (it goes to the audit log)\nRun "sluice block --help" for the actions and options.\n',
    );
    expect(sent).toEqual([]);
  });
});
