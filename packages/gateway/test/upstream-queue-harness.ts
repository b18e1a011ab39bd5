import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Agent } from 'undici';
import { afterAll, afterEach, beforeAll } from 'vitest';
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

/** The tier the upstream queue suites run under: roomy enough that the rate limit never answers for the pool. */
const CONFIG = `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 600, burstLimit: 100 }
`;

/** Requests the upstream holds until `release`. */
export interface HeldRequests {
  /** Resolves with each held request as it comes. */
  readonly arrived: () => Promise<IncomingMessage>;
  /** Answers every held request. */
  readonly release: () => void;
}

/** A gateway whose only upstream connection a held request has taken. */
export interface TakenConnection {
  readonly base: string;
  readonly hold: HeldRequests;
  /** The request that holds the connection, answered once `hold.release()` is called. */
  readonly first: ReturnType<typeof send>;
  /** That request as the upstream sees it. */
  readonly held: IncomingMessage;
}

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
  readonly holdUpstream: (prefix: string) => HeldRequests;
  /**
   * Starts a gateway with one upstream connection and `queueTimeout`, and has a request to `/hold` take that
   * connection: the next request waits for it.
   */
  readonly takeOnlyConnection: (queueTimeout: string) => Promise<TakenConnection>;
  /** The gateway's request log line of the request `reqId`. */
  readonly logLine: (reqId: string) => Record<string, unknown> | undefined;
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

  const start = async (extra: string): Promise<string> => {
    running = await startGateway(join(tmp.dir, 'gw.yaml'), {
      yaml: CONFIG + extra,
      overrides: { upstream: theUpstream().url },
    });
    return running.gateway.url;
  };
  const holdUpstream = (prefix: string): HeldRequests => {
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
  };

  return {
    upstream: theUpstream,
    running: () => running,
    agent,
    start,
    holdUpstream,
    takeOnlyConnection: async (queueTimeout) => {
      const base = await start(`upstream: { connections: 1, queueTimeout: ${queueTimeout} }\n`);
      const hold = holdUpstream('/hold');
      const first = send(agent, `${base}/hold`);
      const held = await hold.arrived();
      return { base, hold, first, held };
    },
    logLine: (reqId) => running?.logs.lines.find((l) => l.msg === 'request' && l.reqId === reqId),
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
