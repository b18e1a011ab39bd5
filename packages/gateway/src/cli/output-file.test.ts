import {
  chmodSync,
  closeSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from './main.js';
import { outputFileProblem, writeFileWhole } from './output-file.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/rate-limits.yaml', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sluice-output-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const line = (s: number, ip = '203.0.113.7') =>
  `${ip} - - [03/Dec/2026:06:00:${String(s).padStart(2, '0')} +0000] "GET /api/items HTTP/1.1" 200 12 "-" "t"`;
const LOG_TEXT = `${Array.from({ length: 30 }, (_, i) => line(i)).join('\n')}\n`;

async function run(argv: string[], stdin?: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    onSignal: () => () => undefined,
    ...(stdin === undefined ? {} : { stdin: Readable.from([Buffer.from(stdin)]) }),
  });
  return { code, out: out.join(''), err: err.join('') };
}

describe('output files of the log commands', () => {
  it('refuses an --out or --html file that is an input: the same path, a symlink or a hard link to it', async () => {
    const log = join(dir, 'access.log');
    writeFileSync(log, LOG_TEXT);
    const config = join(dir, 'limits.yaml');
    writeFileSync(config, readFileSync(EXAMPLE, 'utf8'));
    const hard = join(dir, 'hard.log');
    linkSync(log, hard);
    const soft = join(dir, 'soft.log');
    symlinkSync(log, soft);
    const cases: [string[], string, string][] = [
      [['recommend', '--out', log, log], '--out', 'the log'],
      [['recommend', '--out', `${dir}/./access.log`, log], '--out', 'the log'],
      [['recommend', '--out', hard, log], '--out', 'the log'],
      [['recommend', '--out', soft, log], '--out', 'the log'],
      [['recommend', '--config', config, '--out', config, log], '--out', 'the --config file'],
      [['replay', '--config', config, '--html', log, log], '--html', 'the log'],
      [['replay', '--config', config, '--html', config, log], '--html', 'the --config file'],
    ];
    for (const [argv, option, what] of cases) {
      const r = await run(argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.out).toBe('');
      expect(r.err).toContain(`sluice ${argv[0]}: ${option} must name a file that is no input, got`);
      expect(r.err).toContain(`: it is ${what}`);
      expect(readFileSync(log, 'utf8')).toBe(LOG_TEXT);
      expect(readFileSync(config, 'utf8')).toBe(readFileSync(EXAMPLE, 'utf8'));
    }
    expect(lstatSync(soft).isSymbolicLink()).toBe(true);
    // The --against file is an input too.
    const against = await run(['replay', '--config', config, '--against', EXAMPLE, '--html', EXAMPLE, log]);
    expect(against.err).toContain('it is the --against file');
  });

  it('names the option, the expectation and the value', () => {
    const log = join(dir, 'named.log');
    writeFileSync(log, LOG_TEXT);
    expect(outputFileProblem('--out', log, [{ what: 'the log', path: log }])).toBe(
      `--out must name a file that is no input, got ${JSON.stringify(log)}: it is the log ${JSON.stringify(log)}; write to another file`,
    );
    expect(
      outputFileProblem('--out', join(dir, 'new.yaml'), [{ what: 'the log', path: log }]),
    ).toBeUndefined();
    // Standard input redirected from the file (`sluice recommend --out named.log - < named.log`).
    const fd = openSync(log, 'r');
    try {
      expect(outputFileProblem('--out', log, [{ what: 'the log read from standard input', fd }])).toMatch(
        /: it is the log read from standard input; write to another file$/,
      );
    } finally {
      closeSync(fd);
    }
  });

  it('writes a file whole or not at all: a failed write leaves the old file and no temporary file', () => {
    const folder = join(dir, 'whole');
    mkdirSync(folder);
    const out = join(folder, 'report.html');
    writeFileSync(out, 'old');
    chmodSync(out, 0o640);
    expect(() =>
      writeFileWhole(out, 'x'.repeat(100_000), () => {
        throw new Error('ENOSPC: no space left on device');
      }),
    ).toThrow(/ENOSPC/);
    expect(readFileSync(out, 'utf8')).toBe('old');
    expect(readdirSync(folder)).toEqual(['report.html']);
    writeFileWhole(out, 'new text');
    expect(readFileSync(out, 'utf8')).toBe('new text');
    // The replaced file keeps its permissions.
    expect(statSync(out).mode & 0o777).toBe(0o640);
    expect(readdirSync(folder)).toEqual(['report.html']);
    // Through a symlink, the file it names is replaced and the link kept.
    const link = join(folder, 'link.html');
    symlinkSync(out, link);
    writeFileWhole(link, 'through the link');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(out, 'utf8')).toBe('through the link');
  });
});
