import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../config/gateway-config.js';
import { ADMIN_MAX_CONNECTIONS, ADMIN_MAX_CONNECTIONS_PER_PEER } from './admin-connections.js';
import { AdminServer, type AdminServerOptions } from './admin-server.js';

const TOKEN = 'admin-token-0123456789';

/** A socket from `from` (any 127.0.0.0/8 address is a distinct loopback peer on Linux), once connected. */
function open(port: number, from = '127.0.0.1'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1', localAddress: from }, () => resolve(s));
    s.on('error', reject);
  });
}

/** A socket holding its slot the way an attacker does: half a request head, no token. */
async function idle(port: number, from?: string): Promise<Socket> {
  const s = await open(port, from);
  s.on('error', () => undefined);
  s.write('GET /limited-keys/top HTTP/1.1\r\nhost: x\r\n');
  return s;
}

/** Sends a whole request on a socket and resolves with the status of its answer, or 0 when closed first. */
function ask(s: Socket, token?: string): Promise<number> {
  return new Promise((resolve) => {
    let text = '';
    const onData = (d: Buffer) => {
      text += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})[\s\S]*?\r\n\r\n/.exec(text);
      if (m === null) return;
      s.off('data', onData);
      resolve(Number(m[1]));
    };
    s.on('data', onData);
    s.once('close', () => resolve(0));
    s.on('error', () => undefined);
    const auth = token === undefined ? '' : `authorization: Bearer ${token}\r\n`;
    s.write(`GET /limited-keys/top HTTP/1.1\r\nhost: x\r\n${auth}\r\n`);
  });
}

const closed = (s: Socket) =>
  new Promise<void>((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())));

describe('the admin listener at its connection caps', () => {
  let admin: AdminServer | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await admin?.close();
    admin = undefined;
  });

  async function start(options: AdminServerOptions = {}): Promise<number> {
    admin = new AdminServer({ config: {} as GatewayConfig } as never, TOKEN, undefined, 'admin', options);
    return admin.listen('127.0.0.1', 0);
  }
  const keep = (s: Socket) => {
    sockets.push(s);
    return s;
  };

  it('lets a request with the token through while idle sockets without one hold every slot', async () => {
    const port = await start();
    // Four peers at their own cap fill the listener, as four hosts of a cluster could.
    const peers = ADMIN_MAX_CONNECTIONS / ADMIN_MAX_CONNECTIONS_PER_PEER;
    const held: Socket[] = [];
    for (let p = 0; p < peers; p++)
      for (let i = 0; i < ADMIN_MAX_CONNECTIONS_PER_PEER; i++)
        held.push(keep(await idle(port, `127.0.0.${p + 2}`)));
    const operator = keep(await open(port));
    expect(await ask(operator, TOKEN)).toBe(200);
    // The oldest socket without a token gave its slot; the others still hold theirs.
    await closed(held[0]);
    expect(held.slice(1).filter((s) => s.destroyed)).toEqual([]);
    // Whoever comes next takes an unvouched slot, never the operator's connection.
    for (let i = 0; i < 3; i++) keep(await idle(port, '127.0.0.9'));
    expect(await ask(operator, TOKEN)).toBe(200);
  });

  it('makes a peer at its own cap give up its oldest socket without a token, not another peer', async () => {
    const port = await start();
    const other = keep(await idle(port, '127.0.0.3'));
    const mine: Socket[] = [];
    for (let i = 0; i < ADMIN_MAX_CONNECTIONS_PER_PEER; i++) mine.push(keep(await idle(port, '127.0.0.2')));
    const next = keep(await open(port, '127.0.0.2'));
    expect(await ask(next)).toBe(401);
    await closed(mine[0]);
    // The other peer's socket is untouched: it finishes its head with the token and is answered.
    other.write(`authorization: Bearer ${TOKEN}\r\n\r\n`);
    const answer = await new Promise<string>((resolve) =>
      other.once('data', (d: Buffer) => resolve(String(d))),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('refuses a new connection only when every connection that could give way carried the token', async () => {
    const port = await start({ maxConnections: 2 });
    const a = keep(await open(port));
    const b = keep(await open(port, '127.0.0.2'));
    expect([await ask(a, TOKEN), await ask(b, TOKEN)]).toEqual([200, 200]);
    const c = keep(await open(port, '127.0.0.3'));
    expect(await ask(c, TOKEN)).toBe(0);
    // The vouched connections were kept.
    expect([await ask(a, TOKEN), await ask(b, TOKEN)]).toEqual([200, 200]);
  });

  it('answers a head that does not arrive in time with 408 and closes the connection', async () => {
    const port = await start({ headersTimeoutMs: 200, connectionsCheckingIntervalMs: 50 });
    const s = keep(await idle(port));
    let text = '';
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1');
    });
    await closed(s);
    expect(text).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
  });
});
