import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Agent } from 'undici';
import { afterAll, afterEach, beforeAll } from 'vitest';
import {
  client,
  echo,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

/** The tier the upstream queue suites run under: roomy enough that the rate limit never answers for the pool. */
const CONFIG = `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 600, burstLimit: 100 }
`;

/** A raw connection to the gateway, with what has come back so far. */
export interface RawConnection {
  readonly socket: Socket;
  /** Everything the gateway wrote on the connection so far. */
  readonly answer: () => string;
  /** Resolves when the connection closes. */
  readonly closed: Promise<void>;
}

/** The upstream and gateway of one upstream queue suite, reset after each test. */
export interface QueueHarness {
  /** The upstream, echoing unless a test holds some of its requests. */
  readonly upstream: () => TestUpstream;
  /** The gateway the last `start` gave, or undefined between tests. */
  readonly running: () => TestGateway | undefined;
  /** An undici agent of the suite's own, closed with it. */
  readonly agent: Agent;
  /** Starts a gateway with the suite's tier and `extra` YAML in front of the upstream; resolves its URL. */
  readonly start: (extra: string) => Promise<string>;
  /**
   * Makes the upstream hold the requests whose path starts with `prefix` (answering them only when `release` is
   * called) and echo the others; `arrived` resolves with each held request as it comes.
   */
  readonly holdUpstream: (prefix: string) => { arrived: () => Promise<IncomingMessage>; release: () => void };
  /** Opens a raw connection to `base` and writes `data` (a head, maybe part of a body), closed after the test. */
  readonly raw: (base: string, data: string) => RawConnection;
}

/**
 * Registers the hooks of a suite that fills the gateway's upstream pool (an upstream started once, a gateway
 * per test, raw sockets destroyed after each) and returns what its tests use.
 */
export function queueHarness(): QueueHarness {
  const tmp = tempDir();
  const agent = client();
  let upstream: TestUpstream | undefined;
  let running: TestGateway | undefined;
  const sockets: Socket[] = [];
  const theUpstream = (): TestUpstream => {
    if (upstream === undefined) throw new Error('the upstream starts in beforeAll');
    return upstream;
  };

  beforeAll(async () => {
    upstream = await startUpstream();
  });
  afterAll(async () => {
    await upstream?.close();
    await agent.close();
    tmp.cleanup();
  });
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    const u = theUpstream();
    u.handler = echo;
    u.seen.length = 0;
    await running?.gateway.close();
    running = undefined;
  });

  return {
    upstream: theUpstream,
    running: () => running,
    agent,
    start: async (extra) => {
      running = await startGateway(join(tmp.dir, 'gw.yaml'), {
        yaml: CONFIG + extra,
        overrides: { upstream: theUpstream().url },
      });
      return running.gateway.url;
    },
    holdUpstream: (prefix) => {
      const held: ServerResponse[] = [];
      const waiting: ((r: IncomingMessage) => void)[] = [];
      const queue: IncomingMessage[] = [];
      theUpstream().handler = (req, res) => {
        if (!(req.url ?? '').startsWith(prefix)) {
          echo(req, res);
          return;
        }
        req.on('data', () => undefined);
        held.push(res);
        const w = waiting.shift();
        if (w === undefined) queue.push(req);
        else w(req);
      };
      return {
        arrived: () => {
          const r = queue.shift();
          return r === undefined ? new Promise((resolve) => waiting.push(resolve)) : Promise.resolve(r);
        },
        release: () => {
          for (const res of held.splice(0)) {
            res.writeHead(200, { 'content-type': 'text/plain', connection: 'keep-alive' });
            res.end('released');
          }
        },
      };
    },
    raw: (base, data) => {
      const { hostname, port } = new URL(base);
      const socket = connect(Number(port), hostname);
      sockets.push(socket);
      socket.on('error', () => undefined);
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => {
        answer += c;
      });
      const closed = new Promise<void>((r) => socket.on('close', () => r()));
      socket.write(data);
      return { socket, answer: () => answer, closed };
    },
  };
}
