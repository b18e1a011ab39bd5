import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { ManualClock } from 'sluice';
import { Agent, request } from 'undici';
import { toolPath } from '../../../test/support/tools.js';
import { type LoadConfigOptions, loadConfigFile } from '../src/config/load-config.js';
import { Gateway } from '../src/gateway/gateway.js';
import { createLogger } from '../src/log/create-logger.js';

/**
 * A reader for what a suite helper starts in `beforeAll`: the value, or an error saying it was read too early
 * (at collection time, outside a test).
 *
 * @param suite - the suite's name for the message, for example `the Redis suite`.
 */
export function startedIn(suite: string): <T>(value: T | undefined) => T {
  return <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error(`${suite} starts in beforeAll: read it inside a test`);
    return value;
  };
}

/** A temporary folder removed by `cleanup`. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-gw-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A local upstream whose behaviour each test sets; records what it received. */
export interface TestUpstream {
  readonly url: string;
  readonly server: Server;
  readonly seen: IncomingMessage[];
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  close(): Promise<void>;
}

/** The default upstream answer: 200 with a JSON echo of method, url and headers. */
export function echo(req: IncomingMessage, res: ServerResponse): void {
  let bytes = 0;
  req.on('data', (c: Buffer) => {
    bytes += c.length;
  });
  req.on('end', () => {
    const body = JSON.stringify({ method: req.method, url: req.url, headers: req.headers, bytes });
    res.writeHead(200, {
      'content-type': 'application/json',
      connection: 'keep-alive',
      'x-upstream': 'yes',
      'keep-alive': 'timeout=5',
    });
    res.end(body);
  });
}

export async function startUpstream(): Promise<TestUpstream> {
  const seen: IncomingMessage[] = [];
  const u: TestUpstream = {
    url: '',
    server: createServer((req, res) => {
      seen.push(req);
      u.handler(req, res);
    }),
    seen,
    handler: echo,
    close: () =>
      new Promise<void>((r) => {
        u.server.closeAllConnections();
        u.server.close(() => r());
      }),
  };
  await new Promise<void>((r) => u.server.listen(0, '127.0.0.1', r));
  (u as { url: string }).url = `http://127.0.0.1:${(u.server.address() as AddressInfo).port}`;
  return u;
}

/** Log lines a gateway wrote, parsed. */
export class LogCapture extends Writable {
  readonly lines: Record<string, unknown>[] = [];
  override _write(chunk: Buffer, _e: BufferEncoding, cb: () => void): void {
    for (const line of chunk.toString('utf8').split('\n'))
      if (line.trim() !== '') this.lines.push(JSON.parse(line));
    cb();
  }
}

/** A started gateway over a configuration file, with its clock, logs and wall clock. */
export interface TestGateway {
  readonly gateway: Gateway;
  readonly clock: ManualClock;
  readonly logs: LogCapture;
  readonly file: string;
  /** Wall-clock milliseconds the gateway reads; fixed so that reset epochs are exact. */
  readonly nowMs: number;
}

export const WALL_MS = 1_701_936_000_000;

/**
 * Writes `yaml` to `file` (when given), loads it with the overrides and starts a gateway on port 0 with a
 * ManualClock and a fixed wall clock (`now` replaces it where Redis expiry needs the real time).
 */
export async function startGateway(
  file: string,
  options: LoadConfigOptions & { yaml?: string; watch?: boolean; now?: () => number } = {},
): Promise<TestGateway> {
  if (options.yaml !== undefined) writeFileSync(file, options.yaml);
  const overrides = { port: 0, host: '127.0.0.1', ...options.overrides };
  const loaded = loadConfigFile(file, { env: options.env, overrides });
  if (!loaded.ok) throw new Error(`test config invalid: ${JSON.stringify(loaded.violations)}`);
  const clock = new ManualClock(1_000_000);
  const logs = new LogCapture();
  const gateway = await Gateway.start({
    config: loaded.config,
    configFile: file,
    overrides,
    env: options.env,
    clock,
    now: options.now ?? (() => WALL_MS),
    logger: createLogger('info', logs),
    watch: options.watch ?? false,
  });
  return { gateway, clock, logs, file, nowMs: WALL_MS };
}

/** The full URL of a started gateway's decision endpoint (`decision.path` below `decisionUrl`). */
export function decisionEndpoint(gateway: Gateway): string {
  const { decisionUrl, config } = gateway;
  if (decisionUrl === undefined || config.decision === undefined) throw new Error('no decision: section');
  return decisionUrl + config.decision.path;
}

/** One HTTP client for a test file; `close()` it in afterAll. */
export function client(connect?: Record<string, unknown>): Agent {
  return new Agent({ connect: connect as never, keepAliveTimeout: 1000 });
}

export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  json<T = Record<string, unknown>>(): T;
}

/** Sends a request and reads the whole answer. */
export async function send(
  agent: Agent,
  url: string,
  init: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer | NodeJS.ReadableStream;
  } = {},
): Promise<Reply> {
  const r = await request(url, {
    dispatcher: agent,
    method: (init.method ?? 'GET') as 'GET',
    headers: init.headers,
    body: init.body as never,
  });
  const text = await r.body.text();
  return {
    status: r.statusCode,
    headers: r.headers as Record<string, string | string[] | undefined>,
    text,
    json: <T>() => JSON.parse(text) as T,
  };
}

/** Sends `n` requests one after another; returns the statuses. */
export async function statuses(
  agent: Agent,
  url: string,
  n: number,
  headers?: Record<string, string>,
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await send(agent, url, { headers })).status);
  return out;
}

/**
 * A certificate signed by the test CA of {@link makeCertificates} in `dir` (its `ca.pem` and `ca.key`), with its
 * key: `<name>.pem` and `<name>.key`, the subject in OpenSSL's `-subj` form.
 *
 * @param ext - an extensions file for the certificate (a server's subjectAltName).
 * @returns the paths of the certificate and its key.
 */
export function signLeaf(
  dir: string,
  name: string,
  subject: string,
  ext?: string,
): { cert: string; key: string } {
  const run = (...args: string[]) => execFileSync(toolPath('openssl'), args, { cwd: dir, stdio: 'pipe' });
  run(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    subject,
  );
  run(
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    ...(ext ? ['-extfile', ext] : []),
  );
  return { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
}

/**
 * Test certificates made with openssl: a CA, a server certificate for 127.0.0.1, client certificates signed by
 * the CA (`billing` allowed, `intruder` not), and a self-signed `billing` the CA never signed.
 */
export function makeCertificates(dir: string): Record<string, string> {
  const openssl = toolPath('openssl');
  const run = (...args: string[]) => execFileSync(openssl, args, { cwd: dir, stdio: 'pipe' });
  const f = (n: string) => join(dir, n);
  run(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=Sluice Test CA',
  );
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  const leaf = (name: string, subject: string, ext?: string) => signLeaf(dir, name, subject, ext);
  leaf('server', '/CN=localhost', 'server.ext');
  leaf('billing', '/CN=billing/O=internal');
  leaf('intruder', '/CN=intruder/O=elsewhere');
  run(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'rogue.key',
    '-out',
    'rogue.pem',
    '-days',
    '2',
    '-subj',
    '/CN=billing/O=internal',
  );
  const out: Record<string, string> = {};
  for (const n of [
    'ca.pem',
    'server.pem',
    'server.key',
    'billing.pem',
    'billing.key',
    'intruder.pem',
    'intruder.key',
    'rogue.pem',
    'rogue.key',
  ])
    out[n] = f(n);
  return out;
}

/** A `sluice` command started by {@link spawnSluice}. */
export interface SpawnedSluice {
  readonly child: ChildProcess;
  /** Its stdout and stderr lines so far. */
  readonly lines: string[];
  /**
   * The first line matching `re`, now or when it comes; rejects with the output when the command ends without
   * printing one, so a test fails with what it said rather than with a timeout.
   */
  waitFor(re: RegExp): Promise<string>;
  /** Its exit code, once it ended and its output was read. */
  readonly exited: Promise<number | null>;
}

/** The arguments of `sluice serve` on a free port in front of `upstream`, with `threads` threads. */
export const serveArgs = (file: string, upstream: string, threads: number): string[] => [
  'serve',
  '--config',
  file,
  '--upstream',
  upstream,
  '--port',
  '0',
  '--threads',
  String(threads),
];

/**
 * Runs the `sluice` command from source under `node` (tsx resolves the workspace like the build does) and collects
 * its output lines. The child is added to `spawned`, for the suite to kill whatever a failed assertion left running.
 * With `bin`, the command compiled from the sources by `compiledSluice` (compiled-sluice.ts) runs instead, without
 * tsx: a suite that starts many threaded gateways starts each in a fraction of the time. `env` adds variables to
 * the test process's environment for the command.
 */
export function spawnSluice(
  node: string,
  args: string[],
  spawned: ChildProcess[],
  bin?: string,
  env?: Readonly<Record<string, string>>,
): SpawnedSluice {
  const child = spawn(
    node,
    bin === undefined
      ? ['--import', 'tsx', fileURLToPath(new URL('../src/bin/sluice.ts', import.meta.url)), ...args]
      : [bin, ...args],
    {
      cwd: fileURLToPath(new URL('../../..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(env === undefined ? {} : { env: { ...process.env, ...env } }),
    },
  );
  spawned.push(child);
  const lines: string[] = [];
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = [];
  let buf = '';
  const onData = (d: Buffer) => {
    buf += d.toString('utf8');
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(line);
      for (const w of waiters.splice(0)) {
        if (w.re.test(line)) w.resolve(line);
        else waiters.push(w);
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  // 'close', not 'exit': it comes after the output streams ended, so every line is in `lines` by then.
  const exited = new Promise<number | null>((r) => child.once('close', (code) => r(code)));
  const waitFor = (re: RegExp) =>
    Promise.race([
      new Promise<string>((resolve) => {
        const hit = lines.find((l) => re.test(l));
        if (hit !== undefined) resolve(hit);
        else waiters.push({ re, resolve });
      }),
      exited.then((code) => {
        const hit = lines.find((l) => re.test(l));
        if (hit !== undefined) return hit;
        throw new Error(`sluice exited (${code}) before printing ${re}:\n${lines.join('\n')}`);
      }),
    ]);
  return { child, lines, waitFor, exited };
}

/**
 * Sends one request byte for byte to a local port (no client library normalizes the target or the headers) and
 * resolves with the status of the answer's first line. The socket is closed as soon as that line is read, so an
 * event stream does not hold the test open; it is never half-closed first, since a client that ends its side
 * before the answer is a client that went away.
 */
export function rawStatus(
  port: number,
  method: string,
  target: string,
  headers: readonly [string, string][],
): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let head = '';
    socket.setTimeout(10_000, () => {
      socket.destroy();
      reject(new Error(`no answer to ${method} ${JSON.stringify(target)}`));
    });
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const eol = head.indexOf('\r\n');
      if (eol < 0) return;
      socket.destroy();
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(head.slice(0, eol));
      if (status === null) reject(new Error(`not a status line: ${JSON.stringify(head.slice(0, eol))}`));
      else resolve(Number(status[1]));
    });
    socket.on('error', reject);
    socket.on('end', () => {
      if (!head.includes('\r\n'))
        reject(new Error(`closed without an answer to ${method} ${JSON.stringify(target)}`));
    });
    let text = `${method} ${target} HTTP/1.1\r\nhost: sluice-test\r\nconnection: close\r\n`;
    for (const [k, v] of headers) text += `${k}: ${v}\r\n`;
    socket.write(Buffer.from(`${text}\r\n`, 'utf8'));
  });
}
