import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, startUpstream, type TestGateway, type TestUpstream, tempDir } from './support.js';

const LIMIT = 2;

/** Waits for `ok`, a turn of the event loop at a time (the gateway runs in this process), for at most 5 s. */
async function until(ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
}

/** A client upgrade: its socket and the first bytes the gateway answered. */
interface Opened {
  readonly socket: Socket;
  readonly answer: Promise<string>;
}

describe('load shedding counts WebSocket upgrades', () => {
  const { dir, cleanup } = tempDir();
  let upstream: TestUpstream;
  let t: TestGateway;
  /** Upgrades the upstream received and has not answered yet. */
  const pending: Socket[] = [];
  const all: Socket[] = [];
  const onUpgrade = (_req: IncomingMessage, socket: Socket) => {
    pending.push(socket);
    all.push(socket);
    socket.on('error', () => socket.destroy());
  };

  beforeAll(async () => {
    upstream = await startUpstream();
    upstream.server.on('upgrade', onUpgrade);
    t = await startGateway(join(dir, 'upgrade-shedding.yaml'), {
      yaml: `rateLimiting:
  defaultTier: t
  tiers:
    t: { requestsPerMinute: 600000, burstLimit: 100000 }
overload:
  maxInFlight: ${LIMIT}
  reserve: 0
  retryAfter: 1s
upstream:
  url: ${upstream.url}
`,
    });
  });
  afterAll(async () => {
    for (const s of all) s.destroy();
    upstream.server.off('upgrade', onUpgrade);
    await t.gateway.close();
    await upstream.close();
    cleanup();
  });

  const shedder = () => {
    const s = t.gateway.runtime.overload?.shedder;
    if (s === undefined) throw new Error('no overload stage');
    return s;
  };

  function open(path = '/ws'): Opened {
    const { hostname, port } = new URL(t.gateway.url);
    const socket = connect(Number(port), hostname, () =>
      socket.write(
        `GET ${path} HTTP/1.1\r\nhost: ${hostname}\r\nconnection: upgrade\r\nupgrade: websocket\r\n` +
          'sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
      ),
    );
    all.push(socket);
    socket.on('error', () => socket.destroy());
    const answer = new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (d: Buffer) => {
        text += d.toString();
        if (text.includes('\r\n\r\n')) resolve(text);
      });
      socket.on('close', () => resolve(text));
    });
    return { socket, answer };
  }

  const switchProtocols = (s: Socket) =>
    s.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n');

  it('an upgrade takes a place until the upstream answered it; one over the limit is shed with 503', async () => {
    const first = [open(), open()];
    await until(() => pending.length === LIMIT);
    expect(pending).toHaveLength(LIMIT);
    expect(shedder().inFlight).toBe(LIMIT);
    // A third upgrade (normal priority, no reserve) is refused before it reaches the upstream.
    const shed = await open().answer;
    expect(shed.slice(0, 12)).toBe('HTTP/1.1 503');
    expect(shed).toMatch(/\r\nretry-after: [12]\r\n/);
    expect(shed).toMatch(/\r\ncontent-type: application\/problem\+json\r\n/);
    const body = JSON.parse(shed.slice(shed.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    expect(body).toMatchObject({
      status: 503,
      type: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
      code: 'temporary_reduced_capacity',
      instance: '/ws',
    });
    expect(pending).toHaveLength(LIMIT);
    expect(shedder().shed).toEqual([0, 1, 0]);
    // The upstream answers: each upgrade gives its place back, while its WebSocket lives on.
    for (const s of pending.splice(0)) switchProtocols(s);
    const answers = await Promise.all(first.map((o) => o.answer));
    expect(answers.map((a) => a.slice(0, 12))).toEqual(Array(LIMIT).fill('HTTP/1.1 101'));
    await until(() => shedder().inFlight === 0);
    expect(shedder().inFlight).toBe(0);
    expect(first.every((o) => !o.socket.destroyed)).toBe(true);
    // Closing the WebSockets gives nothing back twice: the next LIMIT upgrades hold places, one more is shed.
    for (const o of first) o.socket.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(shedder().inFlight).toBe(0);
    const next = [open(), open()];
    await until(() => pending.length === LIMIT);
    expect(shedder().inFlight).toBe(LIMIT);
    expect((await open().answer).slice(0, 12)).toBe('HTTP/1.1 503');
    for (const s of pending.splice(0)) switchProtocols(s);
    await Promise.all(next.map((o) => o.answer));
    for (const o of next) o.socket.destroy();
    await until(() => shedder().inFlight === 0);
  });

  it('a client that leaves before the answer, and an upgrade the upstream refuses, give their places back once', async () => {
    const a = open();
    await until(() => pending.length === 1);
    const b = open();
    await until(() => pending.length === LIMIT);
    const [toA, toB] = pending.splice(0);
    expect(shedder().inFlight).toBe(LIMIT);
    // The client of `a` leaves while the upstream still works on its handshake: the place stays the upstream's
    // until it answers (the gateway reads nothing of a socket before the switch: those bytes are the upstream's).
    a.socket.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(shedder().inFlight).toBe(LIMIT);
    if (toA !== undefined) switchProtocols(toA);
    await until(() => shedder().inFlight === LIMIT - 1);
    expect(shedder().inFlight).toBe(LIMIT - 1);
    // The upstream refuses `b` with a plain answer: its place is back once that answer ended.
    toB?.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 2\r\nconnection: close\r\n\r\nno');
    expect((await b.answer).slice(0, 12)).toBe('HTTP/1.1 401');
    await until(() => shedder().inFlight === 0);
    expect(shedder().inFlight).toBe(0);
    toA?.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(shedder().inFlight).toBe(0);
    // Exactly LIMIT places again (not one more from a place given back twice).
    const again = [open(), open()];
    await until(() => pending.length === LIMIT);
    expect((await open().answer).slice(0, 12)).toBe('HTTP/1.1 503');
    for (const s of pending.splice(0)) switchProtocols(s);
    await Promise.all(again.map((o) => o.answer));
    for (const o of again) o.socket.destroy();
  });
});
