import { afterEach, describe, expect, it, vi } from 'vitest';
import { OVERRIDE_HELP, overrideCommand } from './override-command.js';

let sent = 0;
afterEach(() => {
  vi.unstubAllGlobals();
  sent = 0;
});

/** Answers every request with this status and body text, as a server that is not the admin API would. */
function answerWith(status: number, text: string): void {
  vi.stubGlobal('fetch', async () => {
    sent++;
    return new Response(text, { status });
  });
}

async function run(kind: 'override' | 'block', ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await overrideCommand(kind, argv, {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    env: { SLUICE_ADMIN_URL: 'http://proxy.test', SLUICE_ADMIN_TOKEN: 'token' },
  });
  return { code, out: out.join(''), err: err.join('').replace(OVERRIDE_HELP, '') };
}

describe('sluice override against a server that is not the admin API', () => {
  it('says the server answered, but not as the admin API, for JSON of another shape', async () => {
    answerWith(200, '{"method":"GET","url":"/overrides"}');
    for (const argv of [['list'], ['history']] as const) {
      const r = await run('override', ...argv);
      expect(r.code).toBe(1);
      expect(r.err).toContain('http://proxy.test answered, but not as the admin API');
      expect(r.err).toContain('SLUICE_ADMIN_URL');
      expect(r.err).not.toContain('could not be reached');
      expect(r.err).not.toContain('Cannot read properties');
    }
    const b = await run('block', 'list');
    expect(b.err).toContain('answered, but not as the admin API');
    const s = await run('override', 'set', 'ip:192.0.2.9', '--unlimited', '--reason', 'x');
    expect(s.err).toContain('answered, but not as the admin API');
  });

  it('says so for an answer that is not JSON', async () => {
    answerWith(200, '<html>hello</html>');
    const r = await run('override', 'list');
    expect(r.code).toBe(1);
    expect(r.err).toContain('answered, but not as the admin API');
  });

  it('keeps "could not be reached" for a server that does not answer', async () => {
    vi.stubGlobal('fetch', async () => {
      throw new TypeError('fetch failed');
    });
    const r = await run('override', 'list');
    expect(r.code).toBe(1);
    expect(r.err).toContain('could not be reached: fetch failed');
  });
});

describe('sluice override set: numbers', () => {
  it('refuses a --quota or --burst that is not a number before sending anything', async () => {
    answerWith(200, '{"override":{"id":"x"}}');
    const q = await run(
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
    const b = await run(
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
    expect(sent).toBe(0);
  });
});
