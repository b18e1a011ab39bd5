/**
 * A throwaway Prometheus for end-to-end tests: the real `prometheus` binary (Debian package `prometheus`) on a free
 * loopback port, with a temporary config and data directory, scraping the given targets every second. Tests query
 * it over its HTTP API and wait with a deadline (Prometheus scrapes on its own schedule), never with fixed sleeps.
 *
 * @example
 * ```ts
 * const prom = await startPrometheus({ targets: [`127.0.0.1:${port}`], ruleFiles: ['deploy/prometheus/rules/rate-limiting.yaml'] });
 * const v = await prom.waitFor('sum(sluice_rate_limit_exceeded_total)', (n) => n === 5);
 * await prom.stop();
 * ```
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { freePort } from './redis-server.js';
import { toolPath } from './tools.js';

/** Options of {@link startPrometheus}. */
export interface PrometheusOptions {
  /** `host:port` targets to scrape (loopback only), under job `sluice`. */
  readonly targets: readonly string[];
  /** Metrics path of the targets; default `/metrics`. */
  readonly metricsPath?: string;
  /** Rule files to load (copied into the temp dir). */
  readonly ruleFiles?: readonly string[];
  /** Scrape and rule evaluation interval in seconds; default 1. */
  readonly intervalSeconds?: number;
}

/** One sample of an instant query. */
export interface PromSample {
  readonly metric: Record<string, string>;
  readonly value: number;
}

/** A running Prometheus. */
export interface PrometheusServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Runs an instant query through `/api/v1/query`. */
  query(promql: string): Promise<PromSample[]>;
  /**
   * Polls `promql` until the sum of its samples passes `accept`, or throws with the last value after `timeoutMs`
   * (default 20 s). Returns the samples that passed.
   */
  waitFor(
    promql: string,
    accept: (sum: number, samples: PromSample[]) => boolean,
    timeoutMs?: number,
  ): Promise<PromSample[]>;
  /**
   * Runs an instant query until it answers at least one sample (default within 20 s). A scrape that times out on
   * a loaded machine marks the target's series stale, and a query then answers nothing until the next scrape:
   * use this where samples must be there, and {@link PrometheusServer.query} where none is the expected answer.
   */
  present(promql: string, timeoutMs?: number): Promise<PromSample[]>;
  /** GETs an API path (for example `/api/v1/rules`) and returns its `data`. */
  api<T = unknown>(path: string): Promise<T>;
  /** Stops the process (SIGTERM, then SIGKILL after 5 s) and removes the temp dir. */
  stop(): Promise<void>;
}

/**
 * Starts Prometheus and resolves once it answers `/-/ready`.
 *
 * @throws Error when it is not ready within 20 s (its log is quoted).
 */
export async function startPrometheus(options: PrometheusOptions): Promise<PrometheusServer> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-prom-'));
  const interval = options.intervalSeconds ?? 1;
  const rules: string[] = [];
  for (const file of options.ruleFiles ?? []) {
    const target = join(dir, basename(file));
    await copyFile(resolve(file), target);
    rules.push(target);
  }
  const config = [
    'global:',
    `  scrape_interval: ${interval}s`,
    `  scrape_timeout: ${interval}s`,
    `  evaluation_interval: ${interval}s`,
    rules.length > 0 ? `rule_files:\n${rules.map((r) => `  - ${JSON.stringify(r)}`).join('\n')}` : '',
    'scrape_configs:',
    '  - job_name: sluice',
    `    metrics_path: ${JSON.stringify(options.metricsPath ?? '/metrics')}`,
    '    static_configs:',
    `      - targets: [${options.targets.map((t) => JSON.stringify(t)).join(', ')}]`,
    '',
  ].join('\n');
  await writeFile(join(dir, 'prometheus.yml'), config);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let log = '';
  const child: ChildProcess = spawn(
    toolPath('prometheus'),
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout?.on('data', (c: Buffer) => {
    log += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    log += c.toString();
  });
  const exited = once(child, 'exit');

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };

  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${url}${path}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${path}: ${body.error ?? res.status}`);
    return body.data;
  };

  const query = async (promql: string): Promise<PromSample[]> => {
    const data = await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
      `/api/v1/query?query=${encodeURIComponent(promql)}`,
    );
    return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  };

  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`prometheus exited with ${child.exitCode}:\n${log}`);
    }
    try {
      const res = await fetch(`${url}/-/ready`);
      if (res.ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus was not ready within 20 s:\n${log}`);
    }
    await pause(50);
  }

  const waitFor: PrometheusServer['waitFor'] = async (promql, accept, timeoutMs = 20_000) => {
    const end = Date.now() + timeoutMs;
    let last: PromSample[] = [];
    for (;;) {
      last = await query(promql);
      const sum = last.reduce((s, x) => s + x.value, 0);
      if (last.length > 0 && accept(sum, last)) return last;
      if (Date.now() > end) {
        throw new Error(
          `${promql} did not reach the expected value within ${timeoutMs} ms; last: ${JSON.stringify(last)}`,
        );
      }
      await pause(100);
    }
  };

  return {
    url,
    query,
    api,
    waitFor,
    present: (promql, timeoutMs) => waitFor(promql, () => true, timeoutMs),
    stop,
  };
}

/** The interval between polls of a deadline loop (Prometheus works on its own schedule). */
function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
