/**
 * `sluice demo` in a container: the image sets SLUICE_DEMO_HOST=0.0.0.0, because a demo on the container's own
 * loopback cannot be reached through a published port, and `podman run IMAGE demo` takes no flag.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import { configWarnings } from '../src/config/config-warnings.js';
import { runDemo } from '../src/demo/run-demo.js';
import { client, send } from './support.js';

const agent = client();
afterAll(() => agent.close());

/** Runs `sluice demo` in process with `env`; resolves with the printed gateway URL and a stop function. */
async function demo(args: string[], env: Record<string, string>) {
  const out: string[] = [];
  const err: string[] = [];
  const handlers = new Map<string, () => void>();
  let listening!: () => void;
  const started = new Promise<void>((r) => {
    listening = r;
  });
  const io = {
    out: (t: string) => {
      out.push(t);
      if (t.includes('gateway:')) listening();
    },
    err: (t: string) => {
      err.push(t);
      listening();
    },
    env,
    onSignal: (signal: NodeJS.Signals, handler: () => void) => {
      handlers.set(signal, handler);
      return () => handlers.delete(signal);
    },
  };
  const exit = main(['demo', ...args], io);
  await started;
  const line = out.find((l) => l.includes('gateway:')) ?? '';
  return {
    url: line.replace(/^\s*gateway:\s+/, '').trim(),
    err,
    stop: async () => {
      handlers.get('SIGTERM')?.();
      return exit;
    },
  };
}

describe('sluice demo listen address', () => {
  it('listens on SLUICE_DEMO_HOST when --host is not given', async () => {
    const d = await demo(['--port', '0'], { SLUICE_DEMO_HOST: '0.0.0.0' });
    expect(d.err).toEqual([]);
    expect(d.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    const port = new URL(d.url).port;
    const r = await send(agent, `http://127.0.0.1:${port}/api/risk/simulation/studio/run`);
    expect(r.status).toBe(200);
    expect(await d.stop()).toBe(0);
  });

  it('lets --host win over SLUICE_DEMO_HOST, and keeps loopback without either', async () => {
    const given = await demo(['--port', '0', '--host', '127.0.0.1'], { SLUICE_DEMO_HOST: '0.0.0.0' });
    expect(given.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await given.stop()).toBe(0);
    const plain = await demo(['--port', '0'], {});
    expect(plain.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await plain.stop()).toBe(0);
  });

  it('keeps its admin listener on loopback, so a demo on 0.0.0.0 has no plaintext admin warning', async () => {
    const { gateway, stop } = await runDemo({ host: '0.0.0.0', port: 0, print: () => {} });
    try {
      expect(new URL(gateway.url).hostname).toBe('0.0.0.0');
      expect(new URL(gateway.adminUrl as string).hostname).toBe('127.0.0.1');
      expect(configWarnings(gateway.config)).toEqual([]);
    } finally {
      await stop();
    }
  });
});
