/**
 * `sluice serve` in a container: the image sets SLUICE_DEFAULT_HOST=0.0.0.0, because a gateway on the container's
 * own loopback cannot be reached through a published port while its health check (asking 127.0.0.1) still
 * passes. The variable is a default only: `server.host` in the file and `--host` win over it.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultHost } from '../src/cli/listen-host.js';
import { loadConfigText } from '../src/config/load-config.js';
import { spawnSluice, tempDir } from './support.js';

const BASE = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
`;
const tmp = tempDir();
const spawned: ChildProcess[] = [];
afterAll(() => {
  for (const c of spawned) if (c.exitCode === null) c.kill('SIGKILL');
  tmp.cleanup();
});

const hostOf = (yaml: string, overrides: Record<string, string>) => {
  const r = loadConfigText(yaml, 'f.yaml', { overrides, env: {} });
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config.server.host;
};

describe('the default listen address of serve', () => {
  it('reads SLUICE_DEFAULT_HOST, trimmed; empty or absent is no default', () => {
    expect(defaultHost({ SLUICE_DEFAULT_HOST: ' 0.0.0.0 ' })).toBe('0.0.0.0');
    expect(defaultHost({ SLUICE_DEFAULT_HOST: '' })).toBeUndefined();
    expect(defaultHost({})).toBeUndefined();
  });

  it('applies the default only where neither the file nor --host names a host', () => {
    expect(hostOf(BASE, { defaultHost: '0.0.0.0' })).toBe('0.0.0.0');
    expect(hostOf(`${BASE}server:\n  port: 9000\n`, { defaultHost: '0.0.0.0' })).toBe('0.0.0.0');
    expect(hostOf(`${BASE}server:\n  host: 127.0.0.1\n`, { defaultHost: '0.0.0.0' })).toBe('127.0.0.1');
    expect(hostOf(BASE, { defaultHost: '0.0.0.0', host: '::1' })).toBe('::1');
    expect(hostOf(BASE, {})).toBe('127.0.0.1');
  });

  it('makes sluice serve listen on SLUICE_DEFAULT_HOST for a file without server.host', async () => {
    const file = join(tmp.dir, 'no-host.yaml');
    writeFileSync(file, BASE);
    const args = [
      'serve',
      '--config',
      file,
      '--upstream',
      'http://127.0.0.1:9',
      '--port',
      '0',
      '--threads',
      '1',
    ];
    const p = spawnSluice(process.execPath, args, spawned, undefined, { SLUICE_DEFAULT_HOST: '0.0.0.0' });
    const { url } = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    expect(url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });
});
