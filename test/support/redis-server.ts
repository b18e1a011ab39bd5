/**
 * Throwaway Redis servers for tests: a single `redis-server` or a Redis Cluster of local processes, each on free
 * loopback ports in its own temporary directory, with no persistence. Every test suite that needs Redis starts
 * its own and stops it in `afterAll`; nothing is shared between suites, nothing touches a developer's Redis.
 *
 * @example
 * ```ts
 * const server = await startRedisServer();
 * const redis = new Redis(server.port, '127.0.0.1');
 * // ...
 * await redis.quit();
 * await server.stop();
 * ```
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { toolPath } from './tools.js';

const run = promisify(execFile);

/** Loopback only: the test suite never listens on or connects to any other address. */
export const REDIS_HOST = '127.0.0.1';

// Looked up once, on first use (REDIS_SERVER_BIN / REDIS_CLI_BIN name others, for example valkey-server): a
// missing binary fails the suite with the install command.
let serverBin: string | undefined;
let cliBin: string | undefined;
const redisServerPath = () => (serverBin ??= toolPath('redis-server'));
const redisCliPath = () => (cliBin ??= toolPath('redis-cli'));

/**
 * Returns a loopback port that was free a moment ago, chosen below the kernel's ephemeral range
 * (/proc/sys/net/ipv4/ip_local_port_range starts at 32768 by default) and so that port + 10000 (the Cluster bus
 * port) stays below it too. Two reasons: a client that keeps reconnecting to a killed server's ephemeral port can
 * connect to itself (TCP simultaneous open) and read its own commands back as replies, and another process's
 * bind to port 0 can take an ephemeral port between a kill and a restart. Neither can happen below the range.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 10_000 + Math.floor(Math.random() * 12_700);
    if ((await portIsFree(port)) && (await portIsFree(port + 10_000))) return port;
  }
  throw new Error('no free loopback port found between 10000 and 22700');
}

/**
 * Runs one command through `redis-cli` against a local port and returns its raw reply text (trimmed).
 * Meant for administration in tests (CLUSTER INFO, DEBUG, CONFIG SET, SCRIPT FLUSH), not for the hot path.
 */
export async function redisCli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run(redisCliPath(), ['-h', REDIS_HOST, '-p', String(port), ...args], {
    timeout: 10_000,
  });
  return stdout.trim();
}

async function ping(port: number): Promise<boolean> {
  try {
    return (await redisCli(port, 'PING')) === 'PONG';
  } catch {
    return false;
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Options of {@link startRedisServer}. */
export interface RedisServerOptions {
  /** Port to listen on; a free one when omitted. Given when restarting on the same port. */
  readonly port?: number;
  /** Directory for the process (cluster config, logs); a fresh temp dir when omitted. */
  readonly dir?: string;
  /** Start as a Cluster node (cluster-enabled yes) with this node timeout in ms. */
  readonly cluster?: { readonly nodeTimeoutMs: number };
  /** Extra `--name value` arguments, for example `['--maxmemory', '10mb']`. */
  readonly args?: readonly string[];
  /**
   * A program and its arguments to run redis-server under, for example `['valgrind', '--tool=callgrind']`
   * (bench/redis-server-cost.bench.ts); the server's path and arguments follow them.
   */
  readonly wrapper?: readonly string[];
}

/** A running throwaway redis-server. */
export interface RedisServer {
  readonly host: string;
  readonly port: number;
  /** `redis://127.0.0.1:<port>`, for node-redis. */
  readonly url: string;
  readonly dir: string;
  /** The OS process id (for chaos tests that want to signal it themselves). */
  readonly pid: number;
  /** True while the process runs. */
  readonly running: boolean;
  /** SIGKILL, as in a crash: the port refuses connections until `restart`. Resolves when the process is gone. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and dir (after `kill` or `stop(false)`). Resolves when it answers. */
  restart(): Promise<void>;
  /** Stops the process (SIGTERM, SIGKILL after 2 s) and removes the temp dir unless `keepDir` is true. */
  stop(keepDir?: boolean): Promise<void>;
}

function argsFor(port: number, dir: string, options: RedisServerOptions): string[] {
  const args = [
    '--port',
    String(port),
    '--bind',
    REDIS_HOST,
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'no',
    '--logfile',
    join(dir, 'redis.log'),
  ];
  if (options.cluster) {
    args.push(
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      join(dir, 'nodes.conf'),
      '--cluster-node-timeout',
      String(options.cluster.nodeTimeoutMs),
      // A replica may take over however long it was cut off: tests kill masters on purpose.
      '--cluster-replica-validity-factor',
      '0',
      '--cluster-require-full-coverage',
      'no',
    );
  }
  args.push(...(options.args ?? []));
  return args;
}

/** Starts redis-server with `args`, under `options.wrapper` when given. */
function spawnServer(args: string[], options: RedisServerOptions): ChildProcess {
  const [program, ...before] = options.wrapper ?? [];
  return program === undefined
    ? spawn(redisServerPath(), args, { stdio: 'ignore' })
    : spawn(program, [...before, redisServerPath(), ...args], { stdio: 'ignore' });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Starts a redis-server on a free loopback port in a fresh temp dir with no persistence (no RDB, no AOF) and
 * resolves once it answers PING. Stop it with `stop()`.
 *
 * @throws Error when the process does not answer within 10 s (the log file is quoted).
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'sluice-redis-')));
  let port = options.port ?? (await freePort());
  let child!: ChildProcess;

  const alive = () => child.exitCode === null && child.signalCode === null;
  const launch = async (): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      child = spawnServer(argsFor(port, dir, options), options);
      const deadline = Date.now() + 10_000;
      while (alive() && !(await ping(port))) {
        if (Date.now() > deadline) {
          child.kill('SIGKILL');
          throw new Error(
            `redis-server on port ${port} did not answer within 10 s; see ${join(dir, 'redis.log')}`,
          );
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      if (alive()) return;
      // Lost the race for the port (another process bound it after freePort released it): pick another.
      if (attempt >= 3 || options.port !== undefined) {
        throw new Error(`redis-server on port ${port} exited at start; see ${join(dir, 'redis.log')}`);
      }
      port = await freePort();
    }
  };
  try {
    await launch();
  } catch (error) {
    if (options.dir === undefined) await rm(dir, { recursive: true, force: true });
    throw error;
  }

  const server: RedisServer = {
    host: REDIS_HOST,
    get port() {
      return port;
    },
    get url() {
      return `redis://${REDIS_HOST}:${port}`;
    },
    dir,
    get pid() {
      return child.pid ?? -1;
    },
    get running() {
      return child.exitCode === null && child.signalCode === null;
    },
    async kill() {
      if (!server.running) return;
      const gone = exited(child);
      child.kill('SIGKILL');
      await gone;
    },
    async restart() {
      if (server.running) await server.kill();
      const pinned = { ...options, port, dir };
      child = spawnServer(argsFor(port, dir, pinned), pinned);
      await waitFor(`redis-server restart on ${port}`, () => ping(port), 10_000);
    },
    async stop(keepDir = false) {
      if (server.running) {
        const gone = exited(child);
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 2_000);
        await gone;
        clearTimeout(timer);
      }
      if (!keepDir) await rm(dir, { recursive: true, force: true });
    },
  };
  return server;
}

/** Options of {@link startRedisCluster}. */
export interface RedisClusterOptions {
  /** Number of masters; 3 (the minimum Redis Cluster accepts) when omitted. */
  readonly masters?: number;
  /** Replicas per master; 0 when omitted. Use 1 to test a master failover. */
  readonly replicasPerMaster?: number;
  /**
   * cluster-node-timeout in ms; 1000 when omitted, so a killed master is failed over within a few seconds
   * instead of the default 15 s.
   */
  readonly nodeTimeoutMs?: number;
}

/** A running throwaway Redis Cluster. */
export interface RedisCluster {
  /** Every node, masters first as created (roles change after a failover: ask `masterPorts()`). */
  readonly nodes: readonly RedisServer[];
  /** Seed list for ioredis `new Cluster(startupNodes)`. */
  readonly startupNodes: readonly { host: string; port: number }[];
  /** Ports of the nodes that are masters now (CLUSTER NODES on a live node). */
  masterPorts(): Promise<number[]>;
  /** Port of the node serving `key`'s slot now. */
  portForKey(key: string): Promise<number>;
  /** Resolves when every live node reports cluster_state:ok and agrees on a full slot map. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** Stops every node and removes the temp dirs. */
  stop(): Promise<void>;
}

async function clusterOk(port: number): Promise<boolean> {
  try {
    const info = await redisCli(port, 'CLUSTER', 'INFO');
    return info.includes('cluster_state:ok') && info.includes('cluster_slots_ok:16384');
  } catch {
    return false;
  }
}

/**
 * Starts `masters` (default 3) cluster nodes plus `replicasPerMaster` replicas each, joins them with
 * `redis-cli --cluster create`, and resolves when every node reports the cluster healthy.
 *
 * @throws Error when the cluster does not become healthy within 20 s.
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicasPerMaster ?? 0;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 1_000;
  const total = masters * (1 + replicas);
  const nodes: RedisServer[] = [];
  try {
    for (let i = 0; i < total; i++) {
      // A port checked free can be taken before redis-server binds it: try another one then.
      for (let attempt = 0; ; attempt++) {
        const port = await freePort(); // its bus port (port + 10000) is free too
        try {
          nodes.push(await startRedisServer({ port, cluster: { nodeTimeoutMs } }));
          break;
        } catch (error) {
          if (attempt >= 3) throw error;
        }
      }
    }
    await run(
      redisCliPath(),
      [
        '--cluster',
        'create',
        ...nodes.map((n) => `${REDIS_HOST}:${n.port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { timeout: 30_000 },
    );
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw error;
  }

  const cluster: RedisCluster = {
    nodes,
    startupNodes: nodes.map((n) => ({ host: REDIS_HOST, port: n.port })),
    async masterPorts() {
      const live = nodes.find((n) => n.running);
      if (!live) return [];
      const text = await redisCli(live.port, 'CLUSTER', 'NODES');
      return text
        .split('\n')
        .filter((line) => /\bmaster\b/.test(line) && !/\bfail\b/.test(line))
        .map((line) => Number(line.split(' ')[1].split('@')[0].split(':').pop()));
    },
    async portForKey(key: string) {
      const live = nodes.find((n) => n.running)!;
      const slot = Number(await redisCli(live.port, 'CLUSTER', 'KEYSLOT', key));
      const text = await redisCli(live.port, 'CLUSTER', 'NODES');
      for (const line of text.split('\n')) {
        const fields = line.split(' ');
        if (!/\bmaster\b/.test(fields[2] ?? '') || /\bfail\b/.test(fields[2] ?? '')) continue;
        for (const range of fields.slice(8)) {
          const [lo, hi] = range.split('-').map(Number);
          if (slot >= lo && slot <= (hi ?? lo)) return Number(fields[1].split('@')[0].split(':').pop());
        }
      }
      throw new Error(`no master serves slot ${slot}`);
    },
    async waitHealthy(timeoutMs = 20_000) {
      await waitFor(
        'cluster_state:ok on every live node',
        async () => {
          const live = nodes.filter((n) => n.running);
          const states = await Promise.all(live.map((n) => clusterOk(n.port)));
          return states.every(Boolean);
        },
        timeoutMs,
      );
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
  try {
    await cluster.waitHealthy();
    // cluster_state:ok comes before every node has learnt, by gossip, which nodes `--cluster create` made
    // replicas: until then a replica still shows as a master without slots in another node's CLUSTER NODES.
    await waitFor(
      `${masters} masters and ${masters * replicas} replicas in every node's view`,
      async () => {
        const views = await Promise.all(
          nodes.map((n) => redisCli(n.port, 'CLUSTER', 'NODES').catch(() => '')),
        );
        return views.every((text) => {
          const flags = text
            .split('\n')
            .filter((line) => line.trim() !== '')
            .map((line) => line.split(' ')[2] ?? '');
          const count = (role: string) => flags.filter((f) => new RegExp(`\\b${role}\\b`).test(f)).length;
          return (
            flags.length === total && count('master') === masters && count('slave') === masters * replicas
          );
        });
      },
      20_000,
    );
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, REDIS_HOST, () => server.close(() => resolve(true)));
  });
}

/** A running throwaway Redis Sentinel that monitors one master. */
export interface RedisSentinel {
  readonly host: string;
  readonly port: number;
  /** The monitored master's name, for ioredis `{ sentinels, name }`. */
  readonly masterName: string;
  /** Stops the sentinel and removes its temp dir. */
  stop(): Promise<void>;
}

/**
 * Starts a Redis Sentinel (`redis-server <conf> --sentinel`) on a free loopback port that monitors the master on
 * `masterPort` under `masterName` (quorum 1), and resolves once it reports that master's address.
 */
export async function startRedisSentinel(masterPort: number, masterName = 'sluice'): Promise<RedisSentinel> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-sentinel-'));
  const port = await freePort();
  const conf = join(dir, 'sentinel.conf');
  await writeFile(
    conf,
    [
      `port ${port}`,
      `bind ${REDIS_HOST}`,
      `dir ${dir}`,
      `logfile ${join(dir, 'sentinel.log')}`,
      `sentinel monitor ${masterName} ${REDIS_HOST} ${masterPort} 1`,
      `sentinel down-after-milliseconds ${masterName} 1000`,
      '',
    ].join('\n'),
  );
  const child = spawn(redisServerPath(), [conf, '--sentinel'], { stdio: 'ignore' });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = exited(child);
      child.kill('SIGTERM');
      await gone;
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      `sentinel on ${port}`,
      async () => {
        try {
          const addr = await redisCli(port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName);
          return addr.includes(String(masterPort));
        } catch {
          return false;
        }
      },
      10_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { host: REDIS_HOST, port, masterName, stop };
}
