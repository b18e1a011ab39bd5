import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { OVERRIDE_HELP, overrideCommand } from './override-command.js';

// An option given twice is a mistake an operator under pressure makes (a command line edited in the history, a
// reason pasted twice): the last one silently winning would set a rule for two hours when the first said one.
let sent: unknown[];

beforeEach(() => {
  sent = [];
  vi.stubGlobal('fetch', async (_url: string, init: { body?: string }) => {
    sent.push(init.body === undefined ? undefined : JSON.parse(init.body));
    return new Response(JSON.stringify({ override: { id: 'x' } }), { status: 200 });
  });
});
afterEach(() => {
  vi.unstubAllGlobals();
});

async function run(kind: 'override' | 'block', ...argv: string[]) {
  const err: string[] = [];
  const code = await overrideCommand(kind, argv, {
    out: () => {},
    err: (t) => err.push(t),
    env: { SLUICE_ADMIN_URL: 'http://admin.test', SLUICE_ADMIN_TOKEN: 'token' },
  });
  return { code, err: err.join('').replace(OVERRIDE_HELP, '') };
}

describe('sluice override and sluice block: an option given twice', () => {
  it.each([
    ['block', ['set', 'tenant:acme', '--for', '1h', '--for', '2h', '--reason', 'x'], '--for'],
    ['block', ['set', 'tenant:acme', '--for', '1h', '--reason', 'x', '--reason', 'y'], '--reason'],
    ['block', ['set', 'tenant:acme', '--status', '403', '--status=429', '--reason', 'x'], '--status'],
    [
      'override',
      ['set', 'tenant:acme', '--quota', '5', '--quota', '50', '--window', '1m', '--reason', 'x'],
      '--quota',
    ],
    ['override', ['set', 'tenant:acme', '--unlimited', '--unlimited', '--reason', 'x'], '--unlimited'],
    ['override', ['rm', 'tenant:acme', '--reason', 'a', '--reason', 'b'], '--reason'],
  ] as const)('%s %j is refused naming %s, and nothing is sent', async (kind, argv, name) => {
    const r = await run(kind, ...argv);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`${name} is given more than once`);
    expect(sent).toEqual([]);
  });

  it('leaves an option given once as it was', async () => {
    const r = await run('block', 'set', 'tenant:acme', '--for', '1h', '--reason', 'x');
    expect(r.code).toBe(0);
    expect(sent).toEqual([{ pattern: 'tenant:acme', reason: 'x', ttlSeconds: 3600, block: 403 }]);
  });
});
