import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';

const VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    onSignal: () => () => undefined,
  });
  return { code, out: out.join(''), err: err.join('') };
}

describe('sluice command usage', () => {
  it('prints the gateway package version', async () => {
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
    for (const flag of ['--version', '-v'])
      expect(await run(flag)).toEqual({ code: 0, out: `${VERSION}\n`, err: '' });
  });

  it('suggests the command meant for a mistyped one, and only a close one', async () => {
    const r = await run('valdate', 'x.yaml');
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      'sluice: unknown command "valdate" (did you mean "validate"?)\nRun "sluice --help" for the commands and options.\n',
    );
    expect((await run('srve')).err).toMatch(/^sluice: unknown command "srve" \(did you mean "serve"\?\)\n/);
    expect((await run('hashkey', 'k')).err).toMatch(/\(did you mean "hash-key"\?\)/);
    const far = await run('frobnicate');
    expect(far.code).toBe(2);
    expect(far.err).toMatch(/^sluice: unknown command "frobnicate"\n/);
  });

  it('suggests the option meant for a mistyped one', async () => {
    const r = await run('serve', '--confg', 'x.yaml');
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      'sluice: unknown option "--confg" (did you mean "--config"?)\nRun "sluice --help" for the commands and options.\n',
    );
    expect((await run('serve', '--upstrem=http://x')).err).toMatch(
      /unknown option "--upstrem" \(did you mean "--upstream"\?\)/,
    );
    expect((await run('validate', '--verison')).err).toMatch(/\(did you mean "--version"\?\)/);
    expect((await run('validate', '--zzzzzzzz')).err).toMatch(/^sluice: unknown option "--zzzzzzzz"\n/);
    expect((await run('validate', '-x')).err).toMatch(/^sluice: unknown option "-x"\n/);
    // An option without its value keeps parseArgs' own words.
    expect((await run('serve', '--config')).err).toMatch(/--config <value>' argument missing/);
  });
});
