/**
 * A throwaway NGINX (Debian's package, found by test/support/tools.ts) for tests and benchmarks: its own temporary prefix with the pid
 * file, logs and temp paths, `daemon off`, listening on a free loopback port only, stopped by PID. Also renders
 * the auth_request configuration that docs/nginx.md documents, so the end-to-end test runs exactly that text.
 *
 * @example
 * ```ts
 * const nginx = await startNginx((prefix) => authRequestConfig({ port, decision, upstream, prefix }), port);
 * // ...
 * await nginx.stop();
 * ```
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findTool } from '../../scripts/system-tools.mjs';
import { toolPath } from './tools.js';

/**
 * The binary for benchmarks that run without NGINX when it is missing (NGINX_BIN, PATH, then the sbin folders);
 * a suite calls {@link startNginx}, which fails with the install command instead.
 */
export const NGINX_BIN = findTool('nginx') ?? '/usr/sbin/nginx';

/** A running NGINX. */
export interface RunningNginx {
  readonly prefix: string;
  readonly port: number;
  readonly pid: number;
  /** The error log so far (for assertion messages). */
  errorLog(): string;
  /** Stops NGINX (SIGQUIT, then SIGKILL) and removes its prefix. */
  stop(): Promise<void>;
}

/** Settings of {@link authRequestConfig}. */
export interface AuthRequestConfigOptions {
  /** The NGINX listen port (127.0.0.1). */
  readonly port: number;
  /** `host:port` of the Sluice decision API. */
  readonly decision: string;
  /** `host:port` of the application; or serve `root` (a folder) as static files instead. */
  readonly upstream?: string;
  /** A folder served as static files instead of proxying (benchmarks: no second hop). */
  readonly root?: string;
  /** The temporary prefix (pid, logs, temp paths). */
  readonly prefix: string;
  /** Worker processes; default 1. */
  readonly workers?: number;
  /** Access log; default off (benchmarks and tests do not need it). */
  readonly accessLog?: boolean;
}

/**
 * The process-level part every test configuration shares: single process in the foreground, everything under
 * the prefix, so a root-run NGINX touches nothing of the system's.
 */
export function processConfig(prefix: string, workers = 1): string {
  return `daemon off;
master_process ${workers > 1 ? 'on' : 'off'};
worker_processes ${workers};
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 1024; }
`;
}

/** The temp paths of the http block, inside the prefix. */
export function tempPaths(prefix: string): string {
  return `  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
`;
}

/**
 * The documented NGINX configuration (docs/nginx.md, "The configuration"): `auth_request` to the Sluice decision
 * API, `auth_request_set` copying its headers, `add_header ... always` putting them on the answer, and a named
 * location that relays a refusal (429, 403, 401, 400, 503) with the problem body.
 */
export function authRequestConfig(o: AuthRequestConfigOptions): string {
  return `${processConfig(o.prefix, o.workers ?? 1)}
http {
${tempPaths(o.prefix)}  access_log ${o.accessLog === true ? `${o.prefix}/access.log` : 'off'};

  upstream sluice_decision {
    server ${o.decision};
    keepalive 32;
  }
${
  o.upstream === undefined
    ? ''
    : `  upstream app {
    server ${o.upstream};
    keepalive 32;
  }
`
}
  server {
    listen 127.0.0.1:${o.port};

    location / {
      auth_request /_sluice;
      auth_request_set $sluice_status $upstream_status;
      auth_request_set $sluice_ratelimit_policy $upstream_http_ratelimit_policy;
      auth_request_set $sluice_ratelimit $upstream_http_ratelimit;
      auth_request_set $sluice_x_limit $upstream_http_x_ratelimit_limit;
      auth_request_set $sluice_x_remaining $upstream_http_x_ratelimit_remaining;
      auth_request_set $sluice_x_reset $upstream_http_x_ratelimit_reset;
      auth_request_set $sluice_x_policy $upstream_http_x_ratelimit_policy;
      auth_request_set $sluice_retry_after $upstream_http_retry_after;
      auth_request_set $sluice_problem $upstream_http_x_ratelimit_problem;
      auth_request_set $sluice_www_authenticate $upstream_http_www_authenticate;

      add_header RateLimit-Policy $sluice_ratelimit_policy always;
      add_header RateLimit $sluice_ratelimit always;
      add_header X-RateLimit-Limit $sluice_x_limit always;
      add_header X-RateLimit-Remaining $sluice_x_remaining always;
      add_header X-RateLimit-Reset $sluice_x_reset always;
      add_header X-RateLimit-Policy $sluice_x_policy always;

      # auth_request passes 401 and 403 on and answers any other status but 2xx with 500: send all three to the
      # named location, which answers with Sluice's own status and problem body.
      error_page 500 401 403 = @sluice_refused;

${
  o.root === undefined
    ? `      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_pass http://app;`
    : `      root ${o.root};`
}
    }

    location = /_sluice {
      internal;
      proxy_pass http://sluice_decision/decide;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-Method $request_method;
      proxy_set_header X-Original-URI $request_uri;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Request-Id $request_id;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }

    location @sluice_refused {
      default_type application/problem+json;
      add_header RateLimit-Policy $sluice_ratelimit_policy always;
      add_header RateLimit $sluice_ratelimit always;
      add_header X-RateLimit-Limit $sluice_x_limit always;
      add_header X-RateLimit-Remaining $sluice_x_remaining always;
      add_header X-RateLimit-Reset $sluice_x_reset always;
      add_header X-RateLimit-Policy $sluice_x_policy always;
      add_header Retry-After $sluice_retry_after always;
      add_header WWW-Authenticate $sluice_www_authenticate always;
      add_header Cache-Control no-store always;
      # Only an answer about the client carries the problem header. Without it Sluice was unreachable or refused
      # NGINX itself (a peer outside allowedPeers, no X-Original-URI): fail closed, loudly (the error log says why).
      if ($sluice_problem = "") {
        return 500;
      }
      if ($sluice_status = 429) {
        return 429 $sluice_problem;
      }
      if ($sluice_status = 403) {
        return 403 $sluice_problem;
      }
      if ($sluice_status = 401) {
        return 401 $sluice_problem;
      }
      if ($sluice_status = 400) {
        return 400 $sluice_problem;
      }
      if ($sluice_status = 503) {
        return 503 $sluice_problem;
      }
      return 500;
    }
  }
}
`;
}

/** Resolves once something accepts connections on 127.0.0.1:port, or rejects when the process exits first. */
function waitForPort(port: number, child: ChildProcess, log: () => string): Promise<void> {
  return new Promise((resolve, reject) => {
    let done = false;
    const onExit = (code: number | null) => {
      if (done) return;
      done = true;
      reject(new Error(`nginx exited (${code}) before listening:\n${log()}`));
    };
    child.once('exit', onExit);
    const attempt = () => {
      if (done) return;
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        done = true;
        child.off('exit', onExit);
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        // Polling a port that is not open yet: the only signal NGINX gives without a PID dance.
        setTimeout(attempt, 20);
      });
    };
    attempt();
  });
}

/**
 * Writes the configuration into a fresh prefix and starts NGINX in the foreground.
 *
 * @param config - the whole nginx.conf, given the prefix.
 * @param port - the port the configuration listens on (waited for).
 * @throws when NGINX rejects the configuration or exits before listening (with its error log).
 */
export async function startNginx(config: (prefix: string) => string, port: number): Promise<RunningNginx> {
  const prefix = mkdtempSync(join(tmpdir(), 'sluice-nginx-'));
  for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi', 'logs']) mkdirSync(join(prefix, d));
  const file = join(prefix, 'nginx.conf');
  writeFileSync(file, config(prefix));
  const errorLog = () => {
    try {
      return readFileSync(join(prefix, 'error.log'), 'utf8');
    } catch {
      return '';
    }
  };
  let stderr = '';
  const child = spawn(toolPath('nginx'), ['-p', prefix, '-c', file, '-e', join(prefix, 'error.log')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  await waitForPort(port, child, () => `${stderr}${errorLog()}`);
  const pid = child.pid as number;
  return {
    prefix,
    port,
    pid,
    errorLog,
    stop: () =>
      new Promise<void>((resolve) => {
        const finish = () => {
          rmSync(prefix, { recursive: true, force: true });
          resolve();
        };
        if (child.exitCode !== null || child.signalCode !== null) {
          finish();
          return;
        }
        const kill = setTimeout(() => child.kill('SIGKILL'), 3000);
        child.once('exit', () => {
          clearTimeout(kill);
          finish();
        });
        child.kill('SIGQUIT');
      }),
  };
}
