import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  client,
  echo,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

// The slow POST (R.U.D.Y.): a request body trickled in must not hold an upstream connection past the minimum
// rate, `server.bodyTimeout` plus one second per `server.bodyMinRate` bytes.

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let running: TestGateway | undefined;

const CONFIG = `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 300, burstLimit: 50 }
server: { bodyTimeout: 200ms, bodyMinRate: 1000 }
`;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});
afterEach(async () => {
  upstream.handler = echo;
  await running?.gateway.close();
  running = undefined;
});

async function start(extra = ''): Promise<string> {
  running = await startGateway(join(tmp.dir, 'gw.yaml'), {
    yaml: CONFIG + extra,
    overrides: { upstream: upstream.url },
  });
  return running.gateway.url;
}

/** Resolves with the next request the upstream receives, and then with whether it saw it end or cut. */
function nextUpstreamRequest(): Promise<{ req: IncomingMessage; ended: Promise<'complete' | 'aborted'> }> {
  return new Promise((resolve) => {
    upstream.handler = (req, res) => {
      const ended = new Promise<'complete' | 'aborted'>((done) => {
        req.on('data', () => undefined);
        req.on('end', () => {
          done('complete');
          res.end();
        });
        req.on('close', () => done(req.complete ? 'complete' : 'aborted'));
      });
      resolve({ req, ended });
    };
  });
}

describe('request bodies below the minimum rate', () => {
  it('answers 408 and aborts the upstream request when the body trickles', async () => {
    const base = await start();
    const { hostname, port } = new URL(base);
    const seen = nextUpstreamRequest();
    const socket = connect(Number(port), hostname);
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      answer += c;
    });
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.write(
      'POST /upload HTTP/1.1\r\nhost: example.com\r\ncontent-length: 10000000\r\nx-request-id: slow-1\r\n' +
        'content-type: application/octet-stream\r\n\r\nx',
    );
    const { ended } = await seen;
    // The gateway cuts the upstream request: its pool connection is free again.
    expect(await ended).toBe('aborted');
    await closed;
    const end = answer.indexOf('\r\n\r\n');
    const head = answer.slice(0, end).toLowerCase();
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    expect(head).toContain('\r\nconnection: close');
    expect(head).toContain('\r\ncontent-type: application/problem+json');
    expect(JSON.parse(answer.slice(end + 4))).toEqual({
      type: 'about:blank',
      title: 'Request Timeout',
      status: 408,
      detail: 'The request body arrived slower than 1000 bytes per second after the first 0.2 s.',
      instance: '/upload',
      code: 'request_body_timeout',
      correlation_id: 'slow-1',
    });
    const logs = (running as TestGateway).logs;
    await vi.waitFor(() =>
      expect(logs.lines.find((l) => l.msg === 'request' && l.reqId === 'slow-1')).toMatchObject({
        status: 408,
        outcome: 'body_timeout',
      }),
    );
  });

  it('frees the upstream connection a trickling body held for the next client', async () => {
    // One pool connection: the slow POST holds it, a GET waits for it, and gets it once the POST is cut.
    const base = await start('upstream: { connections: 1 }\n');
    const seen = nextUpstreamRequest();
    const { hostname, port } = new URL(base);
    const socket = connect(Number(port), hostname);
    socket.on('error', () => undefined);
    socket.write('POST /upload HTTP/1.1\r\nhost: example.com\r\ncontent-length: 1000\r\n\r\nx');
    const { ended } = await seen;
    upstream.handler = echo;
    const other = send(agent, `${base}/other`);
    expect(await ended).toBe('aborted');
    const r = await other;
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ url: '/other' });
    socket.destroy();
  });

  it('passes a fast body and a slow but steady one above the rate', async () => {
    const base = await start();
    const fast = await send(agent, `${base}/upload`, { method: 'POST', body: Buffer.alloc(256 * 1024, 1) });
    expect(fast.status).toBe(200);
    expect(fast.json()).toMatchObject({ bytes: 256 * 1024 });

    // 100 bytes every 25 ms (4,000 bytes a second, four times the minimum) for 20 rounds: half a second, well past
    // the 200 ms bodyTimeout, which the bytes keep moving.
    const rounds = 20;
    const steady = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        `${base}/upload`,
        { method: 'POST', agent: false, headers: { 'content-length': String(rounds * 100) } },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.flushHeaders();
      let sent = 0;
      const tick = setInterval(() => {
        req.write(Buffer.alloc(100, 2));
        if (++sent === rounds) {
          clearInterval(tick);
          req.end();
        }
      }, 25);
    });
    const r = await steady;
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ bytes: rounds * 100 });
  });
});
