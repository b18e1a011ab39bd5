import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { SluiceError } from 'sluice';
import {
  formatWarnings,
  noUpstreamMessage,
  noUpstreamWarning,
  servesNothing,
} from '../config/config-warnings.js';
import { type ConfigOverrides, loadConfigFile, loadConfigOrThrow } from '../config/load-config.js';
import { redactUrls } from '../config/redact.js';
import { MAX_THREADS } from '../config/value-ranges.js';
import { formatViolations } from '../config/violation.js';
import { defaultThreads, THREADS_UNSUPPORTED_MESSAGE, threadsSupported } from '../gateway/threads-support.js';
import { hashApiKey } from '../identity/api-key-file.js';
import { configFileViolations } from '../server/config-files.js';
import { HELP_TEXT } from './help-text.js';
import { defaultHost } from './listen-host.js';
import { type OnSignal, SignalRouter } from './signal-router.js';
import { joinNegativeValues, unknownCommandMessage, unknownOptionMessage } from './usage-hints.js';

/** Where the CLI writes and how it waits for signals; replaceable in tests. */
export interface CliIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** Registers a signal handler; returns a function that removes it. */
  readonly onSignal: OnSignal;
  /** What `-` reads in the log commands; default the process's standard input. */
  readonly stdin?: Readable;
  /** The environment the override and block commands read; default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

const defaultIo: CliIo = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
  onSignal: (signal, handler) => {
    process.on(signal, handler);
    return () => process.off(signal, handler);
  },
};

/**
 * Runs the `sluice` command.
 *
 * @param argv - the arguments after the program name.
 * @param io - output and signals.
 * @returns the exit code, once the command has finished (for `serve` and `demo`: after shutdown).
 */
export async function main(argv: readonly string[], io: CliIo = defaultIo): Promise<number> {
  // The log commands have options of their own (several logs, repeated --field): they parse their arguments.
  // Each command loads what it runs: a replay of a log starts without the proxy, Redis and gRPC modules.
  if (argv[0] === 'replay') return (await import('./replay-command.js')).replayCommand(argv.slice(1), io);
  if (argv[0] === 'recommend')
    return (await import('./recommend-command.js')).recommendCommand(argv.slice(1), io);
  // These talk to a running gateway and take their own options.
  if (argv[0] === 'override' || argv[0] === 'block') {
    const { overrideCommand } = await import('./override-command.js');
    return overrideCommand(argv[0], argv.slice(1), { out: io.out, err: io.err, env: io.env ?? process.env });
  }
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (e) {
    io.err(`sluice: ${unknownOptionMessage(e, Object.keys(OPTIONS)) ?? (e as Error).message}\n${TRY_HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.version === true) {
    io.out(`${version()}\n`);
    return 0;
  }
  const command = positionals[0];
  if (values.help === true || command === undefined || command === 'help') {
    io.out(HELP_TEXT);
    return command === undefined && values.help !== true ? 2 : 0;
  }
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^[0-9]+$/.test(values.port) || port > 65_535) {
      io.err(`sluice: --port must be an integer from 0 to 65535, got ${JSON.stringify(values.port)}\n`);
      return 2;
    }
  }
  if (values.upstream !== undefined && !/^https?:\/\/./.test(values.upstream)) {
    io.err(
      `sluice: --upstream must be an http:// or https:// URL, got ${redactUrls(JSON.stringify(values.upstream))}\n`,
    );
    return 2;
  }
  let threads: number | undefined;
  if (values.threads !== undefined) {
    threads = Number(values.threads);
    if (!/^[0-9]+$/.test(values.threads) || threads < 1 || threads > MAX_THREADS) {
      io.err(
        `sluice: --threads must be an integer from 1 to ${MAX_THREADS}, got ${JSON.stringify(values.threads)}\n`,
      );
      return 2;
    }
  }
  const overrides: ConfigOverrides = {
    upstream: values.upstream,
    host: values.host,
    port,
    // The container image sets SLUICE_DEFAULT_HOST=0.0.0.0; a file's server.host and --host win over it.
    defaultHost: defaultHost(io.env ?? process.env),
  };
  // Every command but validate takes at most one argument: more is a mistake (a shell glob, a missing quote),
  // named rather than ignored.
  const most = command === 'demo' ? 1 : 2;
  if (command !== 'validate' && positionals.length > most) {
    io.err(
      `sluice: ${command} takes ${most === 1 ? 'no argument' : 'one argument'}; unexpected ${positionals
        .slice(most)
        .map((a) => JSON.stringify(a))
        .join(', ')}\n${TRY_HELP}`,
    );
    return 2;
  }
  switch (command) {
    case 'validate': {
      // Several files (`sluice validate configs/*.yaml` in CI): each is checked and reported; the exit code is
      // the worst of them.
      const files = positionals.length > 1 ? positionals.slice(1) : [values.config];
      let code = 0;
      for (const f of files) code = Math.max(code, validate(f, overrides, io));
      return code;
    }
    case 'serve':
      return serve(values.config ?? positionals[1], overrides, threads, io);
    case 'demo':
      // The container image sets SLUICE_DEMO_HOST=0.0.0.0: a demo on the container's loopback cannot be reached
      // through a published port, and `docker run IMAGE demo` passes no flag. --host still wins.
      return demo(values.host ?? demoHost(io.env ?? process.env), port, io);
    case 'rules':
      // The rules command loads the metrics library for its names: only when asked for.
      return (await import('./rules-command.js')).rulesCommand(values.config ?? positionals[1], io);
    case 'hash-key': {
      const key = positionals[1];
      if (key === undefined || key === '') {
        io.err('sluice: hash-key needs the key as its argument\n');
        return 2;
      }
      io.out(`${hashApiKey(key)}\n`);
      return 0;
    }
    default:
      io.err(`sluice: ${unknownCommandMessage(command, COMMANDS)}\n${TRY_HELP}`);
      return 2;
  }
}

/** The commands, for "did you mean" hints; `main` dispatches on the same names. */
const COMMANDS = [
  'serve',
  'validate',
  'demo',
  'rules',
  'replay',
  'recommend',
  'hash-key',
  'override',
  'block',
  'help',
] as const;

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  upstream: { type: 'string', short: 'u' },
  host: { type: 'string' },
  port: { type: 'string', short: 'p' },
  threads: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

const TRY_HELP = 'Run "sluice --help" for the commands and options.\n';

function parse(argv: readonly string[]) {
  return parseArgs({
    args: joinNegativeValues(argv, OPTIONS),
    allowPositionals: true,
    strict: true,
    options: OPTIONS,
  });
}

/** `n thing` or `n things`. */
function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function validate(file: string | undefined, overrides: ConfigOverrides, io: CliIo): number {
  if (file === undefined) {
    io.err('sluice: validate needs a FILE\n');
    return 2;
  }
  try {
    const r = loadConfigFile(file, { overrides });
    // The files the configuration names are loaded as a start loads them: a file serve refuses is a violation.
    const violations = r.ok ? configFileViolations(r.config) : r.violations;
    if (r.ok && violations.length === 0) {
      const c = r.config;
      // What serve would refuse for want of --upstream is a warning here: the flag may come at start.
      const noUpstream = noUpstreamWarning(c, file);
      const warnings = noUpstream === undefined ? r.warnings : [...r.warnings, noUpstream];
      const n = warnings.length;
      // Warnings go where violations go; a file with warnings only is still valid (exit 0).
      if (n > 0) io.err(`${formatWarnings(file, warnings)}\n`);
      io.out(
        `${file}: valid (${count(Object.keys(c.tiers).length, 'tier')}, ${count(c.endpoints.length, 'endpoint rule')}, ${count(Object.keys(c.classes).length, 'class', 'classes')})${n === 0 ? '' : `, ${count(n, 'warning')}`}\n`,
      );
      return 0;
    }
    io.err(
      `${formatViolations(file, violations)}\n${file}: ${violations.length} violation${violations.length === 1 ? '' : 's'}\n`,
    );
    return 1;
  } catch (e) {
    io.err(`sluice: ${redactUrls((e as Error).message)}\n`);
    return 1;
  }
}

async function serve(
  file: string | undefined,
  overrides: ConfigOverrides,
  asked: number | undefined,
  io: CliIo,
): Promise<number> {
  if (file === undefined) {
    io.err('sluice: serve needs --config FILE\n');
    return 2;
  }
  // Caught before anything starts: a stop sent while the threads start (each logs its own "listening" line)
  // still drains and exits 0.
  const signals = new SignalRouter(io.onSignal, ['SIGINT', 'SIGTERM', 'SIGHUP']);
  try {
    const config = loadConfigOrThrow(file, { overrides });
    // The same loading of named files as validate, before anything starts: each refusal names its file and path.
    const refused = configFileViolations(config);
    if (refused.length > 0) {
      io.err(`sluice: invalid configuration ${file}:\n${formatViolations(file, refused)}\n`);
      signals.off();
      return 1;
    }
    // Decision mode: with a decision API or an Envoy service, the gateway may run without an upstream.
    if (servesNothing(config)) {
      io.err(`sluice: ${noUpstreamMessage(file)}\n`);
      signals.off();
      return 1;
    }
    const threads = asked ?? defaultThreads();
    if (threads > 1 && !threadsSupported()) io.err(`sluice: ${THREADS_UNSUPPORTED_MESSAGE}\n`);
    else if (threads > 1) {
      const { ThreadedGateway } = await import('../gateway/thread-main.js');
      const { gateway: g } = await ThreadedGateway.start({ file, overrides, threads });
      return untilStopped(io, signals, { stop: () => g.close(), reload: () => g.reload(), ended: g.ended });
    }
    // The gateway starts every listener the file configures (proxy, admin, decision API, Envoy) and closes them.
    const { Gateway } = await import('../gateway/gateway.js');
    const gateway = await Gateway.start({ config, configFile: file, overrides });
    return untilStopped(io, signals, { stop: () => gateway.close(), reload: () => void gateway.reload() });
  } catch (e) {
    signals.off();
    io.err(`sluice: ${redactUrls(e instanceof SluiceError ? e.message : (e as Error).message)}\n`);
    return 1;
  }
}

/** The demo's listen address from the environment (`SLUICE_DEMO_HOST`), or undefined for the default. */
function demoHost(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const host = env.SLUICE_DEMO_HOST?.trim();
  return host === undefined || host === '' ? undefined : host;
}

async function demo(host: string | undefined, port: number | undefined, io: CliIo): Promise<number> {
  const signals = new SignalRouter(io.onSignal, ['SIGINT', 'SIGTERM']);
  let stop: () => Promise<void>;
  try {
    const { runDemo } = await import('../demo/run-demo.js');
    ({ stop } = await runDemo({ host, port, print: (line) => io.out(`${line}\n`) }));
  } catch (e) {
    signals.off();
    io.err(`sluice: ${(e as Error).message}\n`);
    return 1;
  }
  return untilStopped(io, signals, { stop });
}

/** What {@link untilStopped} runs: a stop, a reload on SIGHUP, and the end of threads that stop on their own. */
interface Running {
  readonly stop: () => Promise<void>;
  readonly reload?: () => void;
  readonly ended?: Promise<number>;
}

function untilStopped(io: CliIo, signals: SignalRouter, running: Running): Promise<number> {
  const { stop, reload, ended } = running;
  return new Promise((resolve) => {
    let stopping = false;
    const shutdown = () => {
      if (stopping) return;
      stopping = true;
      signals.off();
      stop().then(
        () => resolve(0),
        (e: unknown) => {
          io.err(`sluice: shutdown failed: ${(e as Error).message}\n`);
          resolve(1);
        },
      );
    };
    // Threads that stop on their own end the command with their code.
    ended?.then((code) => {
      signals.off();
      resolve(code);
    });
    signals.route((s) => {
      if (s === 'SIGHUP') reload?.();
      else shutdown();
    });
  });
}

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    return pkg.version;
  } catch {
    return 'unknown';
  }
}
