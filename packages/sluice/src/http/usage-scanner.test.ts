import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventStreamScanner, JsonNumberScanner } from './usage-scanner.js';

const enc = new TextEncoder();
const USAGE = [
  ['usage', 'prompt_tokens'],
  ['usage', 'completion_tokens'],
  ['usage', 'total_tokens'],
];

/** Splits bytes at the given cut points, as a network would. */
function chunks(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const c of at) {
    out.push(bytes.subarray(from, c));
    from = c;
  }
  out.push(bytes.subarray(from));
  return out;
}

function get(value: unknown, path: readonly string[]): unknown {
  let v = value;
  for (const seg of path)
    v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[seg] : undefined;
  return v;
}

describe('JsonNumberScanner', () => {
  it('reads the numbers JSON.parse reads at the wanted paths, whatever the chunking', () => {
    const doc = fc.record({
      id: fc.string(),
      choices: fc.array(fc.record({ index: fc.nat(), text: fc.string() }), { maxLength: 3 }),
      extra: fc.jsonValue({ maxDepth: 3 }),
      usage: fc.option(
        fc.record({
          prompt_tokens: fc.oneof(fc.nat(), fc.double({ min: 0, max: 1e6, noNaN: true }), fc.constant(null)),
          completion_tokens: fc.nat(),
          total_tokens: fc.oneof(fc.nat(), fc.string()),
        }),
        { nil: undefined },
      ),
    });
    fc.assert(
      fc.property(doc, fc.array(fc.nat(), { maxLength: 8 }), fc.boolean(), (d, cuts, pretty) => {
        const text = pretty ? JSON.stringify(d, null, 2) : JSON.stringify(d);
        const paths = [...USAGE, ['choices', '0', 'index']];
        const s = new JsonNumberScanner(paths);
        for (const c of chunks(enc.encode(text), cuts)) s.feed(c);
        s.end();
        const parsed = JSON.parse(text) as unknown;
        paths.forEach((p, i) => {
          const want = get(parsed, p);
          if (typeof want === 'number') {
            expect((s.found >> i) & 1).toBe(1);
            expect(s.values[i]).toBe(want);
          } else expect((s.found >> i) & 1).toBe(0);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('holds nothing of the body: a 10 MB string passes through in constant memory', () => {
    const s = new JsonNumberScanner(USAGE);
    s.feed(enc.encode('{"data":"'));
    const block = new Uint8Array(64 * 1024).fill(0x61);
    for (let i = 0; i < 160; i++) s.feed(block);
    s.feed(enc.encode('","usage":{"total_tokens":42}}'));
    s.end();
    expect(s.values[2]).toBe(42);
  });

  it('stops at what is not JSON, and at nesting deeper than it follows', () => {
    const s = new JsonNumberScanner(USAGE);
    s.feed(enc.encode('<html>{"usage":{"total_tokens":1}}'));
    expect(s.failed).toBe(true);
    expect(s.found).toBe(0);
    const deep = new JsonNumberScanner(USAGE);
    deep.feed(enc.encode('['.repeat(100)));
    expect(deep.failed).toBe(true);
  });
});

describe('EventStreamScanner', () => {
  const event = (data: string) => `data: ${data}\n\n`;
  it('takes the usage of the last event that carries it, over [DONE] and CRLF, whatever the chunking', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat({ max: 50 }), { minLength: 1, maxLength: 6 }),
        fc.nat({ max: 5000 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.boolean(),
        (deltas, total, cuts, crlf) => {
          let text = ': keep-alive\n\nevent: message\n';
          for (const d of deltas) {
            text += event(JSON.stringify({ choices: [{ delta: { content: 'x'.repeat(d) } }], usage: null }));
          }
          text += event(
            JSON.stringify({
              choices: [],
              usage: { prompt_tokens: 7, completion_tokens: total - 7, total_tokens: total },
            }),
          );
          text += event('[DONE]');
          if (crlf) text = text.replaceAll('\n', '\r\n');
          const s = new EventStreamScanner(USAGE);
          for (const c of chunks(enc.encode(text), cuts)) s.feed(c);
          s.end();
          expect(s.found).toBe(0b111);
          expect(Array.from(s.values)).toEqual([7, total - 7, total]);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('joins the data lines of one event, and counts an event the stream ends without a blank line', () => {
    const s = new EventStreamScanner(USAGE);
    s.feed(enc.encode('data: {"usage":\ndata: {"total_tokens": 12}}\n\ndata: {"usage":{"total_tokens":30}}'));
    s.end();
    expect(s.values[2]).toBe(30);
    const malformed = new EventStreamScanner(USAGE);
    malformed.feed(enc.encode('data: {"usage":{"total_tokens":"many"}}\n\n'));
    malformed.end();
    expect(malformed.found).toBe(0);
  });
});
