import { connect, type Socket } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { type DecisionConfig, resolveDecisionConfig } from '../config/decision-config.js';
import type { DecisionHost } from './decide-request.js';
import { asciiHeader, DecisionServer, type DecisionServerOptions } from './decision-server.js';

describe('asciiHeader', () => {
  it('keeps the JSON value and leaves only printable ASCII (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: 'binary' }), (value, text) => {
        const json = JSON.stringify({ value, text });
        const header = asciiHeader(json);
        expect(/^[\x20-\x7e]*$/.test(header)).toBe(true);
        expect(JSON.parse(header)).toEqual(JSON.parse(json));
      }),
    );
  });
});

/** A decision config as the loader resolves it, with `extra` over the defaults. */
function decisionConfig(extra: Partial<DecisionConfig> = {}): DecisionConfig {
  const base = resolveDecisionConfig({ port: 0 }).config as DecisionConfig;
  return { ...base, ...extra };
}

/** The answer a socket gets to `request` (bytes as read until the server closes), or '' when closed unread. */
function exchange(port: number, request: string): { socket: Socket; text: Promise<string> } {
  const socket = connect(port, '127.0.0.1', () => socket.write(request));
  socket.on('error', () => undefined);
  let text = '';
  socket.on('data', (d: Buffer) => {
    text += d.toString('latin1');
  });
  return { socket, text: new Promise((resolve) => socket.once('close', () => resolve(text))) };
}

/** The status of the first answer on a socket kept open. */
function firstStatus(socket: Socket): Promise<number> {
  return new Promise((resolve) => {
    socket.once('data', (d: Buffer) => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(String(d))?.[1] ?? 0)));
    socket.once('close', () => resolve(0));
  });
}

const WRONG_PATH = 'GET /elsewhere HTTP/1.1\r\nhost: x\r\n\r\n';

describe('the decision listener admits connections before reading them', () => {
  const warned: unknown[][] = [];
  const logger = {
    info: () => undefined,
    debug: () => undefined,
    error: () => undefined,
    warn: (...args: unknown[]) => warned.push(args),
  };
  let live = decisionConfig();
  // Only the configuration and the logger are read before a request is decided.
  const host = {
    logger,
    get runtime() {
      return { config: { decision: live } };
    },
  } as unknown as DecisionHost;
  let server: DecisionServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
    warned.length = 0;
  });
  async function start(
    config: DecisionConfig,
    options: Partial<DecisionServerOptions> = {},
  ): Promise<number> {
    live = config;
    server = await DecisionServer.start({ host, config, ...options });
    return Number(new URL(server.url).port);
  }

  it('closes a connection from a peer outside allowedPeers without reading or answering it', async () => {
    const port = await start(decisionConfig({ allowedPeers: ['10.0.0.0/8'] }));
    expect(await exchange(port, WRONG_PATH).text).toBe('');
    expect(warned).toEqual([
      [{ peer: '127.0.0.1', refused: 1 }, expect.stringContaining('decision.allowedPeers')],
    ]);
    // A reload that lists the peer applies to its next connection.
    live = decisionConfig({ allowedPeers: ['loopback'] });
    expect(await exchange(port, `${WRONG_PATH.replace('1.1', '1.0')}`).text).toMatch(/^HTTP\/1\.1 404 /);
  });

  it('holds at most decision.maxConnections connections, and takes a new one once one closes', async () => {
    const port = await start(decisionConfig({ maxConnections: 2 }));
    const a = exchange(port, WRONG_PATH);
    const b = exchange(port, WRONG_PATH);
    expect([await firstStatus(a.socket), await firstStatus(b.socket)]).toEqual([404, 404]);
    expect(await exchange(port, WRONG_PATH).text).toBe('');
    expect(warned[0]?.[1]).toContain('decision.maxConnections');
    a.socket.destroy();
    await a.text;
    const c = exchange(port, WRONG_PATH);
    // The server may see the close a moment after the client: the next connection is tried until one is taken.
    let status = await firstStatus(c.socket);
    for (let i = 0; status === 0 && i < 50; i++)
      status = await firstStatus(exchange(port, WRONG_PATH).socket);
    expect(status).toBe(404);
    b.socket.destroy();
  });

  it('answers a head that does not arrive in time with 408 and closes the connection', async () => {
    const port = await start(decisionConfig(), { headersTimeoutMs: 200, connectionsCheckingIntervalMs: 50 });
    expect(await exchange(port, 'GET /decide HTTP/1.1\r\nhost: x\r\n').text).toMatch(
      /^HTTP\/1\.1 408 Request Timeout\r\n/,
    );
  });
});
