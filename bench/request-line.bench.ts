/**
 * What one request line costs the gateway's process, user and system CPU (the write included), measured in one
 * process where a whole gateway's CPU per request moves by more than a line costs on a shared machine:
 *
 * - `pino`: the line as the gateway wrote it before `logging.requests` (`logger.info(fields, 'request')`,
 *   pino's redaction, formatter and hooks), on the logger of BENCH_BASELINE's tree when given (pino's default
 *   destination there: each line written through the thread pool), else on this tree's;
 * - `request log`: `RequestLog.write` on the same logger, lines written together (32 KiB or a tenth of a
 *   second, whichever comes first: here the size, since a round takes less than that per 32 KiB);
 * - `request log, none`: `RequestLog.wants` of `requests: none`, the floor (nothing built or written).
 *
 * Each turn writes `BENCH_LINES_PER_TURN` lines (default 16: a loaded gateway closes many responses per turn;
 * 1 is an idle one's case), then yields with `setImmediate`. The contenders alternate, A B C then C B A, for
 * BENCH_ROUNDS rounds; the table gives medians and spread of CPU microseconds per line. Lines go to the process's
 * standard output: point it at a file, as a gateway logging to a file does.
 *
 *   npx tsx bench/request-line.bench.ts > /tmp/lines.log
 *   BENCH_BASELINE=/tmp/base npx tsx bench/request-line.bench.ts > /tmp/lines.log
 *   BENCH_REQUEST_LOG_BASELINE=/tmp/rl-base BENCH_LINES_PER_TURN=1 npx tsx bench/request-line.bench.ts > /tmp/l.log
 */
import { createLogger } from '../packages/gateway/src/log/create-logger.js';
import { RequestLog } from '../packages/gateway/src/log/request-log.js';
import { median, table } from './lib/stats.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const PER_TURN = Number(process.env.BENCH_LINES_PER_TURN ?? 16);
const LINES = Number(process.env.BENCH_LINES ?? 40_000);
const logger = createLogger('info');
const log = new RequestLog(logger);
const before: typeof createLogger =
  process.env.BENCH_BASELINE === undefined
    ? createLogger
    : (
        (await import(`${process.env.BENCH_BASELINE}/packages/gateway/src/log/create-logger.ts`)) as {
          createLogger: typeof createLogger;
        }
      ).createLogger;
const pinoLogger = before('info');
// BENCH_REQUEST_LOG_BASELINE: a tree whose RequestLog is compared too (the same line, its own way of writing).
const baselineLog =
  process.env.BENCH_REQUEST_LOG_BASELINE === undefined
    ? undefined
    : await (async (dir: string) => {
        const { createLogger: make } = (await import(`${dir}/packages/gateway/src/log/create-logger.ts`)) as {
          createLogger: typeof createLogger;
        };
        const { RequestLog: Log } = (await import(`${dir}/packages/gateway/src/log/request-log.ts`)) as {
          RequestLog: typeof RequestLog;
        };
        return new Log(make('info'));
      })(process.env.BENCH_REQUEST_LOG_BASELINE);
const ALL = { mode: 'all', share: 1 } as const;
const NONE = { mode: 'none', share: 0 } as const;

const turn = () => new Promise<void>((r) => setImmediate(r));
let seq = 0;

/** One request's fields, as the pipeline has them: a fresh request id, the rest shared. */
function fields(outcome = 'proxied') {
  seq++;
  return {
    reqId: `5f0c9d2e-6a3b-4c1d-9e8f-${String(seq).padStart(12, '0')}`,
    method: 'GET',
    url: '/api/items?page=2',
    status: 200,
    ms: 1.37,
    outcome,
    key: 'tenant:acme:user:u-1234',
    tier: 'standard',
  };
}

const contenders: Record<string, () => void> = {
  pino: () => {
    const f = fields();
    pinoLogger.info(f, 'request');
  },
  'request log': () => {
    const f = fields();
    if (log.wants(ALL, f.outcome)) log.write(f);
  },
  ...(baselineLog === undefined
    ? {}
    : {
        'request log, baseline tree': () => {
          const f = fields();
          if (baselineLog.wants(ALL, f.outcome)) baselineLog.write(f);
        },
      }),
  'request log, none': () => {
    const f = fields();
    if (log.wants(NONE, f.outcome)) log.write(f);
  },
};

async function run(write: () => void): Promise<number> {
  await turn();
  const before = process.cpuUsage();
  for (let i = 0; i < LINES; i += PER_TURN) {
    for (let j = 0; j < PER_TURN; j++) write();
    await turn();
  }
  await turn();
  log.flush(); // the last batch's write, counted in this round
  (baselineLog as { flush?: () => void } | undefined)?.flush?.();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / LINES;
}

async function main(): Promise<void> {
  const names = Object.keys(contenders);
  for (const n of names) await run(contenders[n]); // warm-up
  const got: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? names : [...names].reverse();
    for (const n of order) got[n].push(await run(contenders[n]));
  }
  const floor = got['request log, none'];
  const rows = names.map((n) => {
    const v = got[n];
    const extra = v.map((x, i) => x - floor[i]);
    const f = (a: number[]) =>
      `${median(a).toFixed(2)} (${Math.min(...a).toFixed(2)} to ${Math.max(...a).toFixed(2)})`;
    return [n, f(v), f(extra)];
  });
  process.stderr.write(
    `${LINES} lines a round, ${PER_TURN} a turn, ${ROUNDS} rounds alternating\n${table(
      ['contender', 'CPU us per request', 'over no line (same round)'],
      rows,
    )}\n`,
  );
}

void main();
