import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import { tempDir } from './support.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const TIERS = `rateLimiting:
  defaultTier: f
  tiers:
    f: { requestsPerMinute: 10 }
`;

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), onSignal: () => () => undefined },
  };
}

function file(name: string, text: string): string {
  const f = join(tmp.dir, name);
  writeFileSync(f, text);
  return f;
}

describe('sluice validate loads the files the configuration names, as serve does', () => {
  const keys = file('keys.yaml', 'keys:\n  - { hash: zz, tenant: a, client: b }\n  - { tenant: x }\n');
  const keyValues = file(
    'key-values.yaml',
    `keys:\n  - { hash: ${'a'.repeat(64)}, tenant: "a\\u202Eb" }\n  - { hash: ${'b'.repeat(64)}, client: " " }\n`,
  );
  const jwks = file('jwks.json', 'not json\n');
  const noPem = file('no.pem', '\n');
  const cases = [
    {
      name: 'an API key file with bad entries',
      yaml: `identity:\n  apiKeys: { file: ${keys} }\n${TIERS}`,
      says: ['identity.apiKeys.file', 'keys[0].hash'],
    },
    {
      name: 'an API key file whose values no bucket key may hold',
      yaml: `identity:\n  apiKeys: { file: ${keyValues} }\n${TIERS}`,
      says: [
        'identity.apiKeys.file',
        `${keyValues}:2:`,
        'keys[0].tenant: must not hold a control or bidirectional character (U+202E)',
        `${keyValues}:3:`,
        'keys[1].client: must be a non-empty string',
      ],
    },
    {
      name: 'a JWKS file that is not JSON',
      yaml: `identity:\n  jwt: { jwksFile: ${jwks} }\n${TIERS}`,
      says: ['identity.jwt.jwksFile', jwks],
    },
    {
      name: 'TLS files without PEM',
      yaml: `server:\n  tls: { cert: ${noPem}, key: ${noPem} }\n${TIERS}`,
      says: ['server.tls.cert', 'server.tls.key', noPem],
    },
  ];
  for (const c of cases) {
    it(`refuses ${c.name} in validate and serve, naming the path`, async () => {
      const f = file('bad.yaml', c.yaml);
      const v = io();
      expect(await main(['validate', f, '--upstream', 'http://127.0.0.1:9'], v.io)).toBe(1);
      for (const s of c.says) expect(v.err.join('')).toContain(s);
      const s = io();
      const args = [
        'serve',
        '--config',
        f,
        '--upstream',
        'http://127.0.0.1:9',
        '--port',
        '0',
        '--threads',
        '1',
      ];
      expect(await main(args, s.io)).toBe(1);
      for (const said of c.says) expect(s.err.join('')).toContain(said);
    });
  }
});
