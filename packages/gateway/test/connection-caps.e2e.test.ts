/**
 * Connection caps of the proxy listener (`server.maxConnections`, `server.maxConnectionsPerClient`): sockets that
 * open and never finish a request head are held up to the cap, the next ones are refused with a short 503, the
 * admin listener keeps answering, and a process that runs out of file descriptors keeps running. Every socket is
 * real; a small cap stands for the thousands an attacker would open.
 */
import { type ChildProcess, spawnSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openFileLimit } from '../src/server/open-file-limit.js';
import { compiledSluice } from './compiled-sluice.js';
import {
  serveArgs,
  spawnSluice,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const LIMITS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 6000, burstLimit: 1000 }
`;
const TOKEN = 'connection-caps-admin-token';

const tmp = tempDir();
const spawned: ChildProcess[] = [];
let upstream: TestUpstream;
/** The command compiled from the sources once: each `sluice` started below starts faster than through tsx. */
let compiled: Awaited<ReturnType<typeof compiledSluice>>;

beforeAll(async () => {
  [upstream, compiled] = await Promise.all([startUpstream(), compiledSluice()]);
});
afterAll(async () => {
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await upstream.close();
  compiled?.remove();
  tmp.cleanup();
});

async function gateway(name: string, server: string, extra = ''): Promise<TestGateway> {
  return startGateway(join(tmp.dir, `${name}.yaml`), {
    yaml: `${LIMITS}server: ${server}\nupstream:\n  url: ${upstream.url}\n${extra}`,
  });
}

/**
 * A socket that sends all of a request head but its last empty line, as a slow-head attacker does: the gateway
 * answers it only when it is refused at once, or once {@link HeldSocket.finish} sends the rest.
 */
class HeldSocket {
  /** The answer's head (status line and fields), or '' when the connection closed without one. */
  readonly answer: Promise<string>;
  readonly #socket: Socket;

  private constructor(socket: Socket) {
    this.#socket = socket;
    let text = '';
    this.answer = new Promise((resolve) => {
      socket.on('data', (d: Buffer) => {
        text += d.toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        if (end >= 0) resolve(text.slice(0, end));
      });
      socket.on('close', () => resolve(''));
      // A refused socket may be reset while the test writes to it; the answer says what happened.
      socket.on('error', () => resolve(''));
    });
  }

  static open(port: number, localAddress = '127.0.0.1'): Promise<HeldSocket> {
    return new Promise((resolve, reject) => {
      const s = connect({ port, host: '127.0.0.1', localAddress });
      s.once('error', reject);
      s.once('connect', () => {
        s.off('error', reject);
        s.write('GET /health HTTP/1.1\r\nhost: sluice-test\r\n');
        resolve(new HeldSocket(s));
      });
    });
  }

  /** Calls `f` once the connection is closed, by either side. */
  onClose(f: () => void): void {
    if (this.#socket.closed) f();
    else this.#socket.once('close', f);
  }

  /** Sends the head's last line: a held connection is answered now. */
  finish(): void {
    if (this.#socket.writable) this.#socket.write('\r\n');
  }

  destroy(): void {
    this.#socket.destroy();
  }
}

const statusOf = (head: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
const fieldOf = (head: string, name: string) => new RegExp(`^${name}: *(.*)$`, 'im').exec(head)?.[1]?.trim();

/** Opens `n` held sockets one after the other. */
async function openHeld(port: number, n: number, localAddress?: string): Promise<HeldSocket[]> {
  const out: HeldSocket[] = [];
  for (let i = 0; i < n; i++) out.push(await HeldSocket.open(port, localAddress));
  return out;
}

/** Resolves once `count` of the sockets were answered, with those answers' heads. */
function answered(sockets: readonly HeldSocket[], count: number): Promise<string[]> {
  return new Promise((resolve) => {
    const heads: string[] = [];
    for (const s of sockets)
      void s.answer.then((h) => {
        heads.push(h);
        if (heads.length === count) resolve([...heads]);
      });
  });
}

/** The sockets not answered yet, once `answeredCount` were. */
async function unanswered(sockets: readonly HeldSocket[]): Promise<HeldSocket[]> {
  const done = new Set<HeldSocket>();
  for (const s of sockets) void s.answer.then(() => done.add(s));
  // Answers already received settle in this turn of the microtask queue.
  await Promise.resolve();
  await Promise.resolve();
  return sockets.filter((s) => !done.has(s));
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

describe('server.maxConnections', () => {
  it('refuses connections over the cap with 503, Retry-After and connection: close, counted once each', async () => {
    const t = await gateway(
      'total',
      '{ maxConnections: 20, maxConnectionsPerClient: 0 }',
      `admin: { port: 0, token: ${TOKEN} }\n`,
    );
    const sockets = await openHeld(portOf(t.gateway.url), 25);
    try {
      const refused = await answered(sockets, 5);
      for (const head of refused) {
        expect(statusOf(head), head).toBe(503);
        expect(fieldOf(head, 'connection')).toBe('close');
        expect(Number(fieldOf(head, 'retry-after'))).toBeGreaterThanOrEqual(1);
      }
      // At the cap the admin listener still answers.
      const admin = await fetch(`${t.gateway.adminUrl}/config`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(admin.status).toBe(200);
      await admin.text();
      // The held connections were admitted: once their heads are whole they are served.
      const held = await unanswered(sockets);
      expect(held).toHaveLength(20);
      for (const s of held) s.finish();
      const served = await Promise.all(held.map((s) => s.answer));
      expect(served.map(statusOf)).toEqual(Array(20).fill(200));
      const text = await t.gateway.scrape();
      expect(text).toContain('sluice_connections_refused_total{reason="total"} 5');
      const warnings = t.logs.lines.filter(
        (l) => l.level === 40 && /connections refused/.test(String(l.msg)),
      );
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ reason: 'total', maxConnections: 20 });
    } finally {
      for (const s of sockets) s.destroy();
      await t.gateway.close();
    }
  });
});

describe('idle keep-alive connections at the cap', () => {
  it('are closed to make room when a connection is refused, and held heads are not', async () => {
    const t = await gateway('reclaim', '{ maxConnections: 3, maxConnectionsPerClient: 0 }');
    const port = portOf(t.gateway.url);
    const idle = await HeldSocket.open(port);
    idle.finish();
    expect(statusOf(await idle.answer)).toBe(200);
    const closed = new Promise<void>((resolve) => idle.onClose(resolve));
    const held = await openHeld(port, 2);
    const refused = await HeldSocket.open(port);
    try {
      expect(statusOf(await refused.answer)).toBe(503);
      await closed;
      for (const s of held) s.finish();
      expect((await Promise.all(held.map((s) => s.answer))).map(statusOf)).toEqual([200, 200]);
    } finally {
      for (const s of [idle, ...held, refused]) s.destroy();
      await t.gateway.close();
    }
  });
});

describe('warnings of the caps', () => {
  it('are one a minute for each cap, each with its own count of refusals', async () => {
    const t = await gateway('both', '{ maxConnections: 4, maxConnectionsPerClient: 2 }');
    const port = portOf(t.gateway.url);
    const sockets: HeldSocket[] = [];
    try {
      sockets.push(...(await openHeld(port, 2, '127.0.0.1')));
      // A third of one client: refused at its own cap, then warned about.
      const client = await HeldSocket.open(port, '127.0.0.1');
      sockets.push(client);
      expect(statusOf(await client.answer)).toBe(503);
      sockets.push(...(await openHeld(port, 2, '127.0.0.2')));
      // The listener is full now: a new client is refused at the total cap, within the same minute.
      const full = await openHeld(port, 2, '127.0.0.3');
      sockets.push(...full);
      expect((await Promise.all(full.map((s) => s.answer))).map(statusOf)).toEqual([503, 503]);
      const warnings = t.logs.lines.filter(
        (l) => l.level === 40 && /connections refused/.test(String(l.msg)),
      );
      expect(warnings).toEqual([
        expect.objectContaining({
          reason: 'client',
          refused: 1,
          msg: expect.stringMatching(/maxConnectionsPerClient/),
        }),
        expect.objectContaining({
          reason: 'total',
          refused: 1,
          msg: expect.stringMatching(/server\.maxConnections$/),
        }),
      ]);
      const text = await t.gateway.scrape();
      expect(text).toContain('sluice_connections_refused_total{reason="client"} 1');
      expect(text).toContain('sluice_connections_refused_total{reason="total"} 2');
    } finally {
      for (const s of sockets) s.destroy();
      await t.gateway.close();
    }
  });

  it('of a cap above 45% of the open file limit is a W_MAX_CONNECTIONS_FILE_LIMIT configuration warning', async () => {
    const limit = openFileLimit();
    expect(limit).toBeDefined();
    // The schema's largest cap; the test needs a limit under which it is too high.
    expect((limit as number) * 0.45).toBeLessThan(1_000_000);
    const t = await gateway('high', '{ maxConnections: 1000000 }');
    try {
      const warning = t.logs.lines.find((l) => l.code === 'W_MAX_CONNECTIONS_FILE_LIMIT');
      expect(warning).toMatchObject({
        level: 40,
        path: 'server.maxConnections',
        file: t.file,
        suggestion: expect.stringMatching(/ulimit -n/),
        msg: `configuration warning: server.maxConnections (1000000) is above 45% of the open file limit (${limit}): it leaves too few file descriptors for the rest of the gateway (each proxied connection may need two)`,
      });
    } finally {
      await t.gateway.close();
    }
  });
});

describe('server.maxConnectionsPerClient', () => {
  it('refuses a client over its cap, not another client', async () => {
    const t = await gateway('client', '{ maxConnections: 100, maxConnectionsPerClient: 3 }');
    const port = portOf(t.gateway.url);
    const sockets = await openHeld(port, 4);
    const other = await HeldSocket.open(port, '127.0.0.2');
    try {
      const [refused] = await answered(sockets, 1);
      expect(statusOf(refused)).toBe(503);
      other.finish();
      expect(statusOf(await other.answer)).toBe(200);
      const held = await unanswered(sockets);
      expect(held).toHaveLength(3);
      for (const s of held) s.finish();
      expect((await Promise.all(held.map((s) => s.answer))).map(statusOf)).toEqual([200, 200, 200]);
      expect(await t.gateway.scrape()).toContain('sluice_connections_refused_total{reason="client"} 1');
    } finally {
      for (const s of [...sockets, other]) s.destroy();
      await t.gateway.close();
    }
  });

  it('does not count a trusted proxy per client: a load balancer may hold many connections', async () => {
    const t = await gateway(
      'trusted',
      '{ maxConnections: 100, maxConnectionsPerClient: 3, trustedProxies: [loopback] }',
    );
    const sockets = await openHeld(portOf(t.gateway.url), 6);
    try {
      for (const s of sockets) s.finish();
      expect((await Promise.all(sockets.map((s) => s.answer))).map(statusOf)).toEqual(Array(6).fill(200));
    } finally {
      for (const s of sockets) s.destroy();
      await t.gateway.close();
    }
  });
});

describe('sluice serve --threads 2', () => {
  it('caps the connections of the whole process, not of each thread', async () => {
    const file = join(tmp.dir, 'threads.yaml');
    writeFileSync(file, `${LIMITS}server: { maxConnections: 20, maxConnectionsPerClient: 0 }\n`);
    const p = spawnSluice(process.execPath, serveArgs(file, upstream.url, 2), spawned, compiled.bin);
    const { url } = JSON.parse(await p.waitFor(/sluice gateway listening on every thread/)) as {
      url: string;
    };
    const sockets = await openHeld(portOf(url), 25);
    try {
      const refused = await answered(sockets, 5);
      expect(refused.map(statusOf)).toEqual(Array(5).fill(503));
      const held = await unanswered(sockets);
      expect(held).toHaveLength(20);
      for (const s of held) s.finish();
      expect((await Promise.all(held.map((s) => s.answer))).map(statusOf)).toEqual(Array(20).fill(200));
    } finally {
      for (const s of sockets) s.destroy();
      p.child.kill('SIGTERM');
      await p.exited;
    }
  });
});

describe('a process out of file descriptors', () => {
  it('keeps running when accept fails with EMFILE, and serves again once descriptors are free', async () => {
    // Never skipped: elsewhere than on Linux the test fails here, naming what it needs.
    expect(process.platform, 'this test needs Linux (/proc/PID/fd and prlimit from util-linux)').toBe(
      'linux',
    );
    // maxConnections 0 lets the sockets below reach the descriptor limit: the fault the default cap prevents.
    const file = join(tmp.dir, 'emfile.yaml');
    writeFileSync(file, `${LIMITS}server: { maxConnections: 0, maxConnectionsPerClient: 0 }\n`);
    const p = spawnSluice(process.execPath, serveArgs(file, upstream.url, 1), spawned, compiled.bin);
    const { url } = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    const pid = p.child.pid as number;
    // A few descriptors above what the process holds now: the sockets below exhaust them.
    const limit = readdirSync(`/proc/${pid}/fd`).length + 20;
    const lowered = spawnSync('prlimit', [`--pid=${pid}`, `--nofile=${limit}:${limit}`], {
      encoding: 'utf8',
    });
    expect(lowered.status, lowered.stderr).toBe(0);
    const sockets = await openHeld(portOf(url), 40);
    try {
      // Out of descriptors, the connections it cannot take are accepted and closed at once (libuv's answer to
      // EMFILE); a failed accept it reports instead is logged, not thrown.
      const [closed] = await answered(sockets, 1);
      expect(closed).toBe('');
    } finally {
      for (const s of sockets) s.destroy();
    }
    // Still running: a fresh connection is served once the held ones are gone (the gateway sees them close a
    // little after the test does, so an early attempt may still find no descriptor and be closed).
    let status = 0;
    for (let attempt = 0; attempt < 100 && status !== 200; attempt++) {
      const s = await HeldSocket.open(portOf(url));
      s.finish();
      status = statusOf(await s.answer);
      s.destroy();
    }
    expect(status).toBe(200);
    expect(p.child.exitCode).toBeNull();
    p.child.kill('SIGTERM');
    await p.exited;
  });
});
