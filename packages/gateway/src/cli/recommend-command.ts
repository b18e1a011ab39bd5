import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { redactUrls } from '../config/redact.js';
import { fileBlocks } from '../replay/line-source.js';
import { RATE_WINDOWS_MS } from '../replay/rate-distribution.js';
import { type Recommendation, recommend } from '../replay/recommend.js';
import { missingClientWarning, printable, renderLogStats, textTable } from '../replay/report-text.js';
import { recommendHelp } from './log-command-help.js';
import { outputFileProblem, writeFileWhole } from './output-file.js';
import {
  inputFiles,
  type LogArguments,
  type LogCommandIo,
  logArguments,
  namedConfig,
  parseCommand,
  reportNoRequests,
  UsageError,
} from './replay-command.js';

const RECOMMEND_OPTIONS = {
  config: { type: 'string', short: 'c' },
  spare: { type: 'string' },
  top: { type: 'string' },
  format: { type: 'string' },
  field: { type: 'string', multiple: true },
  json: { type: 'boolean' },
  out: { type: 'string' },
  'reorder-window': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Usage of `sluice recommend`, printed on a usage error and first in its help. */
export const RECOMMEND_USAGE =
  'Usage: sluice recommend [--config FILE] [--spare SHARE] [--top N] [--format FORMAT] [--field NAME=PATH]... [--reorder-window DURATION] [--json] [--out FILE] LOG...\n';

/**
 * `sluice recommend`: proposes tiers and endpoint rules from access logs and confirms them by a replay.
 *
 * @param argv - the arguments after `recommend`.
 * @param io - output and standard input.
 * @returns the exit code: 0 proposed (and confirmed within the share), 1 a configuration could not be used, the
 *   logs hold no request, a log was read only in part (reported from the lines before the break), a failure of
 *   the run, or no proposal limited few enough clients, 2 a usage error (an `--out` file that cannot be written
 *   included, checked before the logs are read).
 */
export async function recommendCommand(argv: readonly string[], io: LogCommandIo): Promise<number> {
  const parsed = parseCommand(
    'recommend',
    argv,
    RECOMMEND_OPTIONS,
    RECOMMEND_USAGE,
    io,
    recommendHelp(RECOMMEND_USAGE),
  );
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  let args: LogArguments;
  let spare = 0.01;
  let top = 10;
  try {
    if (values.spare !== undefined) {
      spare = Number(values.spare);
      if (values.spare.trim() === '' || !Number.isFinite(spare) || spare < 0 || spare > 0.5)
        throw new UsageError(
          `--spare must be a share of clients from 0 to 0.5 (0.01 is 1%), got ${JSON.stringify(values.spare)}`,
        );
    }
    if (values.top !== undefined) {
      top = Number(values.top);
      if (!/^[0-9]+$/.test(values.top) || top < 1 || top > 1000)
        throw new UsageError(`--top must be an integer from 1 to 1000, got ${JSON.stringify(values.top)}`);
    }
    args = logArguments(positionals, values.format, values.field, io, values['reorder-window']);
    const out =
      values.out === undefined
        ? undefined
        : outputFileProblem('--out', values.out, inputFiles(positionals, io, values.config));
    if (out !== undefined) throw new UsageError(out);
  } catch (e) {
    io.err(`sluice recommend: ${(e as Error).message}\n${RECOMMEND_USAGE}`);
    return 2;
  }
  let config: Parameters<typeof recommend>[0]['config'];
  try {
    if (values.config !== undefined)
      config = { ...namedConfig(values.config, io.env), text: readFileSync(values.config, 'utf8') };
  } catch (e) {
    io.err(`sluice recommend: ${redactUrls((e as Error).message)}\n`);
    return 1;
  }
  let spool: string | undefined;
  try {
    // The logs are read more than once (the measure, then each confirming replay): standard input is kept in a
    // temporary file for the run.
    let logs = args.logs;
    if (positionals.includes('-')) {
      spool = mkdtempSync(join(tmpdir(), 'sluice-recommend-'));
      const file = join(spool, 'stdin.log');
      try {
        await pipeline(args.logs[positionals.indexOf('-')].open(), createWriteStream(file));
      } catch (e) {
        throw new Error(`cannot read stdin: ${(e as Error).message}`);
      }
      logs = args.logs.map((l, i) =>
        positionals[i] === '-' ? { name: 'stdin', open: () => fileBlocks(file) } : l,
      );
    }
    const r = await recommend({
      ...args,
      logs,
      spare,
      top,
      ...(config === undefined ? {} : { config }),
      ...(io.env === undefined ? {} : { env: io.env }),
    });
    if (r.requests === 0) {
      // Limits proposed from no traffic would be the defaults dressed up as a measurement.
      reportNoRequests('recommend', r.logs, args.format, io);
      io.err(
        'sluice recommend: the logs hold no request to measure (see sluice replay for their unknown lines): nothing is proposed\n',
      );
      return 1;
    }
    if (values.out !== undefined) writeFileWhole(values.out, r.yaml);
    io.out(values.json === true ? `${JSON.stringify(r, null, 2)}\n` : renderRecommendation(r, values.out));
    // Limits from part of a log are proposed and shown, but a script must be able to tell.
    const broken = r.logs.filter((l) => l.error !== undefined);
    for (const l of broken)
      io.err(`sluice recommend: ${printable(l.name)} was read only in part: ${printable(l.error ?? '')}\n`);
    return r.confirmation.withinSpare && broken.length === 0 ? 0 : 1;
  } catch (e) {
    // A failure of the run (a log that cannot be read, a file the proposal cannot be written to) is a message,
    // never a stack trace.
    io.err(`sluice recommend: ${redactUrls((e as Error).message)}\n`);
    return 1;
  } finally {
    if (spool !== undefined) rmSync(spool, { recursive: true, force: true });
  }
}

const fmt = (v: number) => (Number.isInteger(v) ? v.toLocaleString('en-US') : v.toFixed(1));
/** An estimate to three significant digits: its last digits are noise. */
const roughly = (v: number) => {
  if (v < 1000) return Math.round(v);
  const unit = 10 ** (Math.floor(Math.log10(v)) - 2);
  return Math.round(v / unit) * unit;
};

/**
 * The terminal form: the logs that were not read whole, the distributions, what logs shorter than a window could
 * not measure, the proposed file (or where it was written), and the confirming replay.
 *
 * @param r - the recommendation.
 * @param written - the `--out` file the proposed configuration was written to, if any: it is then not repeated.
 */
export function renderRecommendation(r: Recommendation, written?: string): string {
  const out: string[] = [];
  out.push(...renderLogStats(r.logs, (l) => l.error !== undefined || l.formatLine !== undefined));
  const missing = missingClientWarning(r.clientsMissing, r.requests);
  if (missing !== undefined) out.push(missing);
  const about = (v: number, estimated: boolean) => (estimated ? `about ${fmt(roughly(v))}` : fmt(v));
  const once =
    r.clientsOneRequest > 0
      ? ` (${about(r.clientsOneRequest, r.clientsEstimated)} sent one request: counted, not in the peaks)`
      : '';
  out.push(
    `${fmt(r.requests)} request${r.requests === 1 ? '' : 's'} from ${about(r.clients, r.clientsEstimated)} client${r.clients === 1 ? '' : 's'}${once}.${r.clientsEstimated ? ' Client counts are estimated (HyperLogLog sketches: a standard error of 0.8% for all clients and a tier, 1.6% for an endpoint): the logs have more clients than are counted one by one.' : ''} Per-client peak requests in a sliding window (p50 / p90 / p99 / max over the clients with more than one request):`,
  );
  const w = RATE_WINDOWS_MS.map((ms) => (ms === 1000 ? '1 s' : ms === 60_000 ? '1 min' : '1 h'));
  out.push(
    textTable(
      ['', 'requests', 'clients', 'one request', ...w],
      r.groups.map((g) => [
        g.group,
        fmt(g.requests),
        about(g.clients, g.estimated),
        about(g.oneRequest, g.estimated),
        ...g.windows.map((p) => `${fmt(p.p50)} / ${fmt(p.p90)} / ${fmt(p.p99)} / ${fmt(p.max)}`),
      ]),
      [false, true, true, true, true, true, true],
    ),
  );
  const st = r.staticFiles;
  if (st.requests > 0)
    out.push(
      `${fmt(st.requests)} request${st.requests === 1 ? '' : 's'} for static files (${fmt(st.paths)} path${st.paths === 1 ? '' : 's'} such as .css, .js, images and fonts) ${st.requests === 1 ? 'was' : 'were'} measured in their tier but given no endpoint rule: a page loads them in a burst (exempt them with exemptions.endpoints if they should not count at all)`,
    );
  for (const p of r.proposals)
    if (p.kept !== undefined) out.push(`  ${printable(p.name)}: not changed, ${p.kept}`);
  out.push('');
  // What the logs were too short to measure, next to the limits it concerns.
  for (const w of r.warnings) out.push(`Warning: ${printable(w)}.`);
  if (r.warnings.length > 0) out.push('');
  const heading = `# Proposed limits: at most ${(r.spare * 100).toFixed(2)}% of clients and of requests limited, never the p99 client`;
  if (written === undefined) {
    out.push(`${heading}.`);
    out.push(r.yaml.trimEnd());
  } else out.push(`${heading}: written to ${printable(written)}`);
  out.push('');
  const c = r.confirmation;
  const over = [c.requestShare > r.spare ? 'requests' : '', c.share > r.spare ? 'clients' : ''].filter(
    (x) => x,
  );
  out.push(
    `Replay of the logs under the proposed limits: ${fmt(c.limited)} of ${fmt(c.requests)} requests (${(c.requestShare * 100).toFixed(2)}%) limited; ${fmt(c.limitedClients)} of ${about(c.clients, r.clientsEstimated)} clients (${(c.share * 100).toFixed(2)}%) limited at least once${c.withinSpare ? `, within --spare ${r.spare} for both` : `, MORE ${over.join(' and ')} than --spare ${r.spare}`} (${c.rounds} round${c.rounds === 1 ? '' : 's'}).`,
  );
  return `${out.join('\n')}\n`;
}
