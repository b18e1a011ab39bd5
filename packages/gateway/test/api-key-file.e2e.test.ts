import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../src/identity/api-key-file.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let t: TestGateway | undefined;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await t?.gateway.close();
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});

const keys = join(tmp.dir, 'keys.yaml');
const CONFIG = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 10 }
identity:
  apiKeys: { file: keys.yaml }
`;

/** The key file is read again by each reload: a file with values no bucket key may hold keeps the old one. */
describe('a reload with an API key file whose values are refused', () => {
  it('keeps the configuration in effect, and names every refused value with its line', async () => {
    writeFileSync(keys, `keys:\n  - { hash: ${hashApiKey('k1')}, tenant: acme, client: ci }\n`);
    t = await startGateway(join(tmp.dir, 'gateway.yaml'), {
      yaml: CONFIG,
      overrides: { upstream: upstream.url },
    });
    const keyed = async () => {
      await send(agent, `${t?.gateway.url}/x`, { headers: { 'x-api-key': 'k1' } });
      return t?.logs.lines.filter((l) => l.msg === 'request').at(-1)?.key;
    };
    expect(await keyed()).toBe('tenant:acme:client:ci');
    writeFileSync(
      keys,
      `keys:\n  - { hash: ${hashApiKey('k1')}, tenant: "ac\\nme", client: ci }\n  - { hash: ${hashApiKey('k2')}, tier: "${'t'.repeat(300)}" }\n`,
    );
    const r = await t.gateway.reload();
    expect(r.ok).toBe(false);
    const said = r.violations.map((v) => v.message).join('\n');
    expect(said).toContain(`${keys}:2:`);
    expect(said).toContain('keys[0].tenant: must not hold a control or bidirectional character (U+000A)');
    expect(said).toContain(`${keys}:3:`);
    expect(said).toContain('keys[1].tier: must be at most 256 UTF-8 bytes, got 300');
    expect(await keyed()).toBe('tenant:acme:client:ci');
  });
});
