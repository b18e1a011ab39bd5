/**
 * A Kubernetes ConfigMap mounted as a folder: the kubelet never writes the file in place. The folder holds
 * `rate-limits.yaml -> ..data/rate-limits.yaml`, `..data -> ..<timestamp>` and the timestamped folder; an update
 * writes a new timestamped folder, points `..data_tmp` at it, renames `..data_tmp` over `..data` (one atomic
 * rename) and removes the old folder. No event ever names `rate-limits.yaml`, so the watch has to notice that the
 * file now resolves somewhere else.
 */
import { once } from 'node:events';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ReloadResult } from '../src/gateway/gateway.js';
import { client, send, startGateway, startUpstream, type TestGateway, tempDir } from './support.js';

const tmp = tempDir();
const agent = client();
let running: TestGateway | undefined;
const upstream = await startUpstream();

afterEach(async () => {
  await running?.gateway.close();
  running = undefined;
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});

const config = (burst: number) => `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: ${burst} }
`;

/** A ConfigMap volume as the kubelet lays it out (atomic writer), holding `files`. */
class ConfigMapVolume {
  #generation = 0;
  #current: string | undefined;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  /** Writes a new generation and swaps `..data` to it, as the kubelet's atomic writer does. */
  publish(files: Record<string, string>): void {
    this.#generation += 1;
    const generation = `..2026_12_07_10_00_0${this.#generation}.00000000${this.#generation}`;
    mkdirSync(join(this.dir, generation));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(this.dir, generation, name), text);
    symlinkSync(generation, join(this.dir, '..data_tmp'));
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    for (const name of Object.keys(files)) {
      try {
        symlinkSync(join('..data', name), join(this.dir, name));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
    }
    if (this.#current !== undefined) rmSync(join(this.dir, this.#current), { recursive: true });
    this.#current = generation;
  }
}

describe('a configuration mounted from a Kubernetes ConfigMap', () => {
  it('reloads when the kubelet swaps the ..data symlink', { timeout: 10_000 }, async () => {
    const volume = new ConfigMapVolume(join(tmp.dir, 'etc-sluice'));
    volume.publish({ 'rate-limits.yaml': config(5) });
    const file = join(volume.dir, 'rate-limits.yaml');
    running = await startGateway(file, { overrides: { upstream: upstream.url }, watch: true });
    expect((await send(agent, `${running.gateway.url}/x`)).headers.ratelimit).toBe('"free";r=4;t=1');

    const reloaded = once(running.gateway, 'reload');
    volume.publish({ 'rate-limits.yaml': config(7) });
    const [result] = (await reloaded) as [ReloadResult];
    expect(result.ok).toBe(true);
    expect((await send(agent, `${running.gateway.url}/x`)).headers.ratelimit).toBe('"free";r=6;t=1');

    // A second swap reloads again: the watch follows the folder, not the generation it first resolved to.
    const again = once(running.gateway, 'reload');
    volume.publish({ 'rate-limits.yaml': config(9) });
    expect(((await again) as [ReloadResult])[0].ok).toBe(true);
    expect((await send(agent, `${running.gateway.url}/x`)).headers.ratelimit).toBe('"free";r=8;t=1');
  });
});
