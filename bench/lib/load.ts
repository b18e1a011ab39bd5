/**
 * Load generation and CPU placement shared by the socket benchmarks.
 *
 * On a 2-core machine the load generator, the server under test and (for the gateway) the upstream compete for the
 * same CPUs, and which process the scheduler favours moves a requests-per-second figure by more than the
 * differences being measured. So, where the machine allows it: the load generator runs on the first CPU, the
 * servers on the last (`taskset`), and the load comes from wrk (C, one thread: a few microseconds of CPU per
 * request) instead of autocannon (a Node.js process that needs about as much CPU per request as the server).
 * `BENCH_LOADGEN=autocannon` and `BENCH_PIN=0` restore the old arrangement.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import autocannon from 'autocannon';

/** Whether `command` is on PATH. */
export function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The load generator in use: wrk when it is installed (Debian package "wrk"), unless BENCH_LOADGEN says otherwise. */
export const LOADGEN: 'wrk' | 'autocannon' =
  process.env.BENCH_LOADGEN === 'autocannon' || !onPath('wrk') ? 'autocannon' : 'wrk';

const CPUS = availableParallelism();

/** Whether processes are pinned: two or more CPUs, taskset present, and BENCH_PIN not 0. */
export const PINNED = process.env.BENCH_PIN !== '0' && CPUS >= 2 && onPath('taskset');

/**
 * The CPU list for servers under test: BENCH_SERVER_CPUS (a taskset list, for a machine with spare cores), else
 * the last CPU, or undefined when not pinned.
 */
export const SERVER_CPUS = process.env.BENCH_SERVER_CPUS || (PINNED ? String(CPUS - 1) : undefined);

/** The CPU list for the load generator and the upstream: BENCH_LOADGEN_CPUS, else the first CPU, or undefined. */
export const LOADGEN_CPUS = process.env.BENCH_LOADGEN_CPUS || (PINNED ? '0' : undefined);

/**
 * The command and arguments that start `command` on the given CPUs (unchanged when `cpus` is undefined).
 *
 * @param cpus - a taskset CPU list.
 * @param command - the program.
 * @param args - its arguments.
 */
export function pinned(
  cpus: string | undefined,
  command: string,
  args: readonly string[],
): [string, string[]] {
  return cpus === undefined ? [command, [...args]] : ['taskset', ['-c', cpus, command, ...args]];
}

/** Every CPU, as a taskset list. */
export const ALL_CPUS = `0-${CPUS - 1}`;

/** The pids of a process's direct children (NGINX's workers), from procfs; none where there is no procfs. */
export function childPids(pid: number): number[] {
  try {
    const list = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    return list === '' ? [] : list.split(/\s+/).map(Number);
  } catch {
    return [];
  }
}

/**
 * Moves a process, every thread of it and its children to `cpus`; nothing when processes are not pinned (or
 * `cpus` is undefined), and nothing for a process that is gone.
 *
 * @param pid - the process.
 * @param cpus - a taskset CPU list.
 */
export function pinTree(pid: number, cpus: string | undefined): void {
  if (!PINNED || cpus === undefined) return;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
  } catch {
    return;
  }
  for (const c of childPids(pid)) pinTree(c, cpus);
}

/**
 * CPU seconds a process and its children have used, from procfs; undefined where there is none. With `taskset`
 * in front, the pid is taskset's, which execs the program: the same process.
 *
 * @param pid - the process.
 */
export function cpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined || !existsSync(`/proc/${pid}/stat`)) return undefined;
  const ticks = (p: number): number => {
    try {
      const f = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ');
      return Number(f[11]) + Number(f[12]); // utime, stime (fields 14 and 15 of the whole line)
    } catch {
      return 0;
    }
  };
  let total = ticks(pid);
  for (const c of childPids(pid)) total += ticks(c);
  return total / 100; // USER_HZ is 100 on Linux
}

/** One load run's outcome. */
export interface LoadResult {
  /** Requests per second over the run. */
  readonly rps: number;
  /** Responses counted. */
  readonly total: number;
  /** Responses with a status outside 2xx and 3xx. */
  readonly non2xx: number;
  /** Socket errors and timeouts. */
  readonly errors: number;
}

/** Settings of one load run. */
export interface LoadOptions {
  readonly url: string;
  readonly connections: number;
  /** Whole seconds (wrk's resolution). */
  readonly seconds: number;
  /** Requests in flight per connection; autocannon only (wrk sends one at a time). */
  readonly pipelining?: number;
}

/**
 * Runs the load generator against `url` at full speed and returns what it measured.
 *
 * @param options - target, connections, duration.
 */
export function runLoad(options: LoadOptions): Promise<LoadResult> {
  return LOADGEN === 'wrk' ? runWrk(options) : runAutocannon(options);
}

async function runAutocannon(o: LoadOptions): Promise<LoadResult> {
  const r = await autocannon({
    url: o.url,
    connections: o.connections,
    duration: o.seconds,
    pipelining: o.pipelining ?? 1,
  });
  return {
    rps: r.requests.total / r.duration,
    total: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

function runWrk(o: LoadOptions): Promise<LoadResult> {
  const [cmd, args] = pinned(LOADGEN_CPUS, 'wrk', [
    '-t1',
    `-c${o.connections}`,
    `-d${Math.max(1, Math.round(o.seconds))}s`,
    '--latency',
    o.url,
  ]);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const total = /(\d+) requests in/.exec(out);
      const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
      if (code !== 0 || total === null || rps === null) {
        reject(new Error(`wrk exited ${code}: ${out}`));
        return;
      }
      const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
      const errs = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      resolve({
        rps: Number(rps[1]),
        total: Number(total[1]),
        non2xx: non2xx === null ? 0 : Number(non2xx[1]),
        errors: errs === null ? 0 : errs.slice(1).reduce((a, b) => a + Number(b), 0),
      });
    });
  });
}

/** A description of the arrangement for a benchmark's header line. */
export function arrangement(): string {
  const gen = LOADGEN === 'wrk' ? 'wrk (1 thread)' : 'autocannon (in the bench process)';
  return PINNED
    ? `load from ${gen} pinned to CPU ${LOADGEN_CPUS}, servers pinned to CPU ${SERVER_CPUS}`
    : `load from ${gen}, no CPU pinning`;
}
