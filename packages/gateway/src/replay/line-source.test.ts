import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fileBlocks, forEachLine, READ_BYTES } from './line-source.js';

/** Reads `bytes` cut into pieces at `cuts` (byte offsets) and returns what the reader delivered. */
async function read(
  bytes: Buffer,
  cuts: readonly number[] = [],
  maxLineChars?: number,
): Promise<{ lines: (string | undefined)[]; nos: number[]; count: number }> {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const c of [...at, bytes.length]) {
    if (c > from) pieces.push(bytes.subarray(from, c));
    from = Math.max(from, c);
  }
  const lines: (string | undefined)[] = [];
  const nos: number[] = [];
  const r = await forEachLine(
    Readable.from(pieces),
    (line, no) => {
      lines.push(line);
      nos.push(no);
    },
    maxLineChars,
  );
  return { lines, nos, count: r.lines };
}

/** What a reader must deliver for `text`: its lines without `\n` or `\r\n`, overlong ones as `undefined`. */
function expected(text: string, max: number): (string | undefined)[] {
  if (text === '') return [];
  const parts = text.split('\n');
  if (text.endsWith('\n')) parts.pop();
  return parts.map((p) => {
    const line = p.endsWith('\r') ? p.slice(0, -1) : p;
    return line.length > max ? undefined : line;
  });
}

/** Requires `bytes`, cut anywhere and gzipped, to read as `lines`, reported as `encoding` (none for UTF-8). */
async function expectDecoded(
  bytes: Buffer,
  lines: readonly string[],
  encoding: string | undefined,
): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.nat(bytes.length), { maxLength: 6 }), async (cuts) => {
      const got = await read(bytes, cuts);
      expect(got.lines).toEqual(lines);
    }),
    { numRuns: 60 },
  );
  const r = await forEachLine(Readable.from([gzipSync(bytes)]), () => {});
  expect(r).toEqual({ lines: lines.length, gzip: true, ...(encoding === undefined ? {} : { encoding }) });
}

describe('forEachLine', () => {
  it('delivers every line once, in order, however the bytes are cut (inside a character, between CR and LF)', async () => {
    const line = fc.string({
      unit: fc.constantFrom('a', 'é', '€', '😀', '\r', ' ', '\uFFFD'),
      maxLength: 14,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { maxLength: 12 }),
        fc.constantFrom('\n', '\r\n'),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.integer({ min: 1, max: 12 }),
        async (lines, eol, trailing, cuts, max) => {
          const text = lines.join(eol) + (trailing && lines.length > 0 ? eol : '');
          const got = await read(Buffer.from(text), cuts, max);
          const want = expected(text, max);
          expect(got.lines).toEqual(want);
          expect(got.nos).toEqual(want.map((_, i) => i + 1));
          expect(got.count).toBe(want.length);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('keeps a line of three-byte characters at the limit when its CRLF is cut from it', async () => {
    const bytes = Buffer.from('\uFFFD\uFFFD\r\nok\r\n');
    for (let cut = 1; cut < bytes.length; cut++)
      expect((await read(bytes, [cut], 2)).lines).toEqual(['\uFFFD\uFFFD', 'ok']);
  });

  it('drops a line longer than the limit whether it spans reads or not, and keeps the lines around it', async () => {
    const long = 'x'.repeat(70_000);
    const text = `a\n${long}\nb\n${long}${long}\nc`;
    const bytes = Buffer.from(text);
    for (const cuts of [[], [5_000, 40_000, 100_000, 150_000], [3], [70_003, 70_004]]) {
      const got = await read(bytes, cuts);
      expect(got.lines).toEqual(['a', undefined, 'b', undefined, 'c']);
    }
  });

  it('replaces bytes that are not UTF-8, as a decoder would, without losing the line breaks around them', async () => {
    const bytes = Buffer.concat([Buffer.from('a'), Buffer.from([0xff, 0xc3]), Buffer.from('\nb\n')]);
    expect((await read(bytes, [2])).lines).toEqual(['a\uFFFD\uFFFD', 'b']);
  });

  it('reads concatenated gzip members, cut anywhere', async () => {
    const bytes = Buffer.concat([gzipSync('one\ntwo\n'), gzipSync('three\n')]);
    for (const cuts of [[], [1], [10, 20, 30]]) {
      const got = await read(bytes, cuts);
      expect(got.lines).toEqual(['one', 'two', 'three']);
    }
  });

  it('reads a file in blocks (lines across blocks, a gzip file), and reports a file it cannot open', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-lines-'));
    try {
      // Lines of every length around the block size, so that breaks fall at each end of a block.
      const lines = Array.from({ length: 3000 }, (_, i) => `${i} ${'é'.repeat(i % 97)}`);
      const text = `${lines.join('\n')}\n`;
      expect(Buffer.byteLength(text)).toBeGreaterThan(3 * READ_BYTES);
      const plain = join(dir, 'a.log');
      writeFileSync(plain, text);
      const zipped = join(dir, 'a.log.gz');
      writeFileSync(zipped, gzipSync(text));
      for (const file of [plain, zipped]) {
        const got: (string | undefined)[] = [];
        const r = await forEachLine(fileBlocks(file), (line) => {
          got.push(line);
        });
        expect(got).toEqual(lines);
        expect(r).toEqual({ lines: lines.length, gzip: file === zipped });
      }
      const missing = await forEachLine(fileBlocks(join(dir, 'none.log')), () => {});
      expect(missing.lines).toBe(0);
      expect(missing.error).toMatch(/ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('decodes UTF-16 (byte order mark or not, either byte order, cut anywhere, gzip too) and drops a UTF-8 one', async () => {
    // PowerShell's `>` writes UTF-16LE with a byte order mark; a UTF-8 mark would otherwise begin the first line.
    const lines = ['10.0.0.1 - - "GET /é HTTP/1.1"', '', 'x\u{1F600}y', `${'z'.repeat(40)}`];
    const text = `${lines.join('\r\n')}\r\n`;
    const le = Buffer.from(text, 'utf16le');
    const be = Buffer.from(le).swap16();
    const cases: [Buffer, string | undefined][] = [
      [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]), undefined],
      [Buffer.concat([Buffer.from([0xff, 0xfe]), le]), 'UTF-16LE'],
      [Buffer.concat([Buffer.from([0xfe, 0xff]), be]), 'UTF-16BE'],
      [le, 'UTF-16LE'],
      [be, 'UTF-16BE'],
    ];
    for (const [bytes, encoding] of cases) await expectDecoded(bytes, lines, encoding);
    // A mark alone, or with half a character after it, is no line (and no crash).
    expect((await read(Buffer.from([0xff, 0xfe]))).lines).toEqual([]);
    expect((await read(Buffer.from([0xff, 0xfe, 0x41]))).lines).toEqual(['\ufffd']);
  });

  it('decodes UTF-32 (byte order mark or not, either byte order, cut anywhere, gzip too)', async () => {
    // PowerShell's `Out-File -Encoding utf32` writes UTF-32LE with a byte order mark, FF FE 00 00, whose first
    // two bytes are UTF-16LE's mark: the four are read together.
    const lines = ['10.0.0.1 - - "GET /é HTTP/1.1"', '', 'x\u{1F600}y', `${'z'.repeat(40)}`];
    const text = `${lines.join('\r\n')}\r\n`;
    const points = [...text].map((c) => c.codePointAt(0) ?? 0);
    const le = Buffer.alloc(points.length * 4);
    for (const [i, p] of points.entries()) le.writeUInt32LE(p, i * 4);
    const be = Buffer.from(le).swap32();
    const cases: [Buffer, string][] = [
      [Buffer.concat([Buffer.from([0xff, 0xfe, 0, 0]), le]), 'UTF-32LE'],
      [Buffer.concat([Buffer.from([0, 0, 0xfe, 0xff]), be]), 'UTF-32BE'],
      [le, 'UTF-32LE'],
      [be, 'UTF-32BE'],
    ];
    for (const [bytes, encoding] of cases) await expectDecoded(bytes, lines, encoding);
    // A code point past U+10FFFF, a lone surrogate and a last unit cut short are replacement characters.
    const bad = Buffer.concat([Buffer.from([0xff, 0xfe, 0, 0]), Buffer.alloc(16)]);
    bad.writeUInt32LE(0x41, 4);
    bad.writeUInt32LE(0x110000, 8);
    bad.writeUInt32LE(0xd800, 12);
    bad.writeUInt32LE(0x0a, 16);
    const tail = Buffer.concat([bad, Buffer.from([0x42, 0])]);
    expect((await read(tail, [5, 13])).lines).toEqual(['A\ufffd\ufffd', '\ufffd']);
  });
});
