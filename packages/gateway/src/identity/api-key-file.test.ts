import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ApiKeyFile, hashApiKey } from './api-key-file.js';

const dir = mkdtempSync(join(tmpdir(), 'sluice-key-values-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function keyFile(name: string, text: string): string {
  const f = join(dir, name);
  writeFileSync(f, text);
  return f;
}

const h = (k: string) => hashApiKey(k);

/** Values of the key file become bucket keys as identity headers do: held to the same checks, when it is loaded. */
describe('API key file values', () => {
  it('refuses a tenant, client or tier with a control or bidirectional character, empty, or too long, each with its line', () => {
    const f = keyFile(
      'bad.yaml',
      [
        'keys:',
        `  - { hash: ${h('k1')}, tenant: "a\\nb", client: c1 }`,
        `  - { hash: ${h('k2')}, tenant: acme, client: "web\\u202Eapp" }`,
        `  - { hash: ${h('k3')}, tenant: acme, tier: "${'t'.repeat(257)}" }`,
        `  - { hash: ${h('k4')}, tenant: "   ", client: c4 }`,
        `  - { hash: ${h('k5')}, tenant: acme, client: "" }`,
        `  - { hash: ${h('k6')}, tenant: "ü${'u'.repeat(255)}" }`,
        '',
      ].join('\n'),
    );
    let error: unknown;
    try {
      new ApiKeyFile(f);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'ERR_INVALID_CONFIG' });
    const lines = (error as Error).message.split('\n').slice(1);
    expect(lines).toEqual([
      `${f}:2:${col(2, 'tenant')} keys[0].tenant: must not hold a control or bidirectional character (U+000A)`,
      `${f}:3:${col(3, 'client')} keys[1].client: must not hold a control or bidirectional character (U+202E)`,
      `${f}:4:${col(4, 'tier')} keys[2].tier: must be at most 256 UTF-8 bytes, got 257`,
      `${f}:5:${col(5, 'tenant')} keys[3].tenant: must be a non-empty string`,
      `${f}:6:${col(6, 'client')} keys[4].client: must be a non-empty string`,
      `${f}:7:${col(7, 'tenant')} keys[5].tenant: must be at most 256 UTF-8 bytes, got 257`,
    ]);
    expect((error as { details: { violations: unknown[] } }).details.violations).toHaveLength(6);

    /** The 1-based column of a key's value on a line of the file. */
    function col(line: number, key: string): number {
      return readFileSync(f, 'utf8').split('\n')[line - 1].indexOf(`${key}: `) + key.length + 3;
    }
  });

  it('gives the line of every other problem too, and reads values trimmed as headers are', () => {
    const bad = keyFile('hash.yaml', `keys:\n  - { tenant: x }\n  - hash: zz\n    tenant: y\n`);
    expect(() => new ApiKeyFile(bad)).toThrow(
      `${bad}:2:5 keys[0].hash: must be 64 hex digits (SHA-256), got undefined\n${bad}:3:11 keys[1].hash: must be 64 hex digits (SHA-256), got "zz"`,
    );
    const good = keyFile(
      'good.yaml',
      `keys:\n  - { hash: ${h('k1')}, tenant: " Acme ", client: " web ", tier: gold }\n`,
    );
    expect(new ApiKeyFile(good).identify('k1')).toMatchObject({
      tenant: 'acme',
      client: 'web',
      tier: 'gold',
    });
  });
});
