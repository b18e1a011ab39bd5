import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DURATION_EXAMPLES, durationMs } from './duration.js';

const schema = JSON.parse(
  readFileSync(new URL('../../schema/rate-limits.schema.json', import.meta.url), 'utf8'),
) as { definitions: { duration: { pattern: string; description: string } } };

describe('durationMs', () => {
  it.each([
    [30, 30_000],
    [0.5, 500],
    ['500ms', 500],
    ['60s', 60_000],
    ['1.5m', 90_000],
    ['1h', 3_600_000],
    ['7d', 604_800_000],
    ['0.5d', 43_200_000],
    ['366d', 366 * 86_400_000],
  ])('reads %s as %s ms', (value, ms) => {
    expect(durationMs(value)).toBe(ms);
  });

  it.each(['7', '1w', '1D', 'd', '1 h', '-1s', '1.d'])('reads %s as no duration', (value) => {
    expect(durationMs(value)).toBeUndefined();
  });

  it("accepts exactly the strings the schema's duration pattern accepts, and the schema names every unit", () => {
    const pattern = new RegExp(schema.definitions.duration.pattern);
    for (const s of ['500ms', '60s', '5m', '1h', '7d', '1.5d', '1w', '7', 'd', '1D', '1.d', '1 h']) {
      expect(pattern.test(s), s).toBe(durationMs(s) !== undefined);
    }
    expect(schema.definitions.duration.description).toContain(`such as ${DURATION_EXAMPLES}.`);
  });
});
