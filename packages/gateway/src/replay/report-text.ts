import { capacityNotes } from './capacity-notes.js';
import { costsNotes } from './costs-notes.js';
import { MAX_HELD } from './reorder-window.js';
import type { OutcomeCounts } from './replay-outcome.js';
import type { ConfigReport, ReplayReport } from './replay-report.js';
import type { LogStats } from './replay-run.js';

const n = (v: number) => v.toLocaleString('en-US');
/** A count and its noun, singular for one (`1 request`, `2 requests`). */
const count = (v: number, noun: string) => `${n(v)} ${noun}${v === 1 ? '' : 's'}`;
const pct = (part: number, whole: number) =>
  whole === 0 ? '-' : `${((part / whole) * 100).toFixed(part === 0 || part === whole ? 0 : 2)}%`;

/**
 * Whether a UTF-16 code unit must not reach a terminal as it is.
 *
 * @param code - the code unit.
 * @returns true for C0 and C1 control characters, DEL, and the bidirectional embeddings, overrides and isolates.
 */
export function unprintable(code: number): boolean {
  return (
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069)
  );
}

/**
 * Text from a log made safe for a terminal: control characters (an escape sequence could retitle the window,
 * write the clipboard or hide text) and bidirectional controls (which reorder what is shown) are written as
 * `\xHH` or `\uHHHH`; everything else is left as it is.
 *
 * @param s - a key, path or name read from a log.
 */
export function printable(s: string): string {
  let i = 0;
  while (i < s.length && !unprintable(s.charCodeAt(i))) i++;
  if (i === s.length) return s;
  let out = s.slice(0, i);
  for (; i < s.length; i++) {
    const code = s.charCodeAt(i);
    if (!unprintable(code)) out += s[i];
    else out += code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16)}`;
  }
  return out;
}

/**
 * A table with a header row, numbers right-aligned, columns separated by two spaces. Cells are shown through
 * {@link printable}: they hold keys and paths from logs.
 */
export function textTable(
  head: readonly string[],
  cellRows: readonly (readonly string[])[],
  numeric: readonly boolean[],
): string {
  const rows = cellRows.map((r) => r.map(printable));
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(head), ...rows.map(line)].map((l) => `  ${l}`).join('\n');
}

const COUNT_HEAD = ['requests', 'allowed', 'queued', 'limited', 'limited %', 'exempt', 'refused'];
const countCells = (c: OutcomeCounts) => [
  n(c.requests),
  n(c.allowed),
  n(c.queued),
  n(c.limited),
  pct(c.limited, c.requests),
  n(c.exempt),
  n(c.refused),
];

function configSection(r: ConfigReport): string[] {
  const out: string[] = [];
  out.push(`Per tier (${r.config}):`);
  out.push(
    textTable(
      ['tier', ...COUNT_HEAD],
      r.tiers.map((t) => [t.tier, ...countCells(t)]),
      [false, true, true, true, true, true, true, true],
    ),
  );
  out.push('');
  out.push(`Per policy (${r.config}): "limited here" counts the requests the policy itself refused.`);
  out.push(
    r.policies.length === 0
      ? '  (no request reached a policy)'
      : textTable(
          ['policy', 'requests', 'allowed', 'queued', 'limited here', 'shadow would limit'],
          r.policies.map((p) => [
            p.policy,
            n(p.requests),
            n(p.allowed + p.exempt),
            n(p.queued),
            n(p.limitedHere),
            n(p.wouldLimit),
          ]),
          [false, true, true, true, true, true],
        ),
  );
  out.push('');
  out.push(
    `Keys limited most (${n(r.limitedKeyCount)} key${r.limitedKeyCount === 1 ? '' : 's'} limited at least once):`,
  );
  out.push(
    r.limitedKeys.length === 0
      ? '  (none)'
      : textTable(
          ['key', 'limited', 'first', 'last', 'max Retry-After', 'policies'],
          r.limitedKeys.map((k) => [
            k.key,
            n(k.count),
            k.first,
            k.last,
            `${k.maxRetryAfter} s`,
            k.policies.join(', '),
          ]),
          [false, true, false, false, true, false],
        ),
  );
  return out;
}

/**
 * The lines of a report on what reading each log found: its counts and format, the unknown lines, the line the
 * format was chosen from, and a reading that stopped early.
 *
 * @param logs - the logs' statistics.
 * @param only - which logs to show; default all.
 */
export function renderLogStats(
  logs: readonly LogStats[],
  only: (l: LogStats) => boolean = () => true,
): string[] {
  const out: string[] = [];
  for (const l of logs) {
    if (!only(l)) continue;
    const parts = [
      count(l.requests, 'request'),
      count(l.lines, 'line'),
      l.format ?? 'no request line',
      ...(l.gzip ? ['gzip'] : []),
      ...(l.encoding === undefined ? [] : [`${l.encoding}, decoded`]),
    ];
    out.push(`${printable(l.name)}: ${parts.join(', ')}`);
    if (l.formatLine !== undefined)
      out.push(
        `  format detected from line ${n(l.formatLine)}, the first line a format reads (the lines before it are unknown)`,
      );
    if (l.unknown > 0)
      out.push(
        `  ${count(l.unknown, 'unknown line')} skipped (line ${l.unknownLines.join(', ')}${l.unknown > l.unknownLines.length ? ', ...' : ''})`,
      );
    if (l.skipped > 0)
      out.push(
        `  ${count(l.skipped, 'line')} that ${l.skipped === 1 ? 'is' : 'are'} no request to admit skipped`,
      );
    if (l.error !== undefined) out.push(`  reading stopped early: ${printable(l.error)}`);
  }
  return out;
}

/**
 * The warning on requests without a client address, or `undefined` when every request had one.
 *
 * @param lines - requests without a client address or caller identity.
 * @param requests - all requests.
 */
export function missingClientWarning(lines: number, requests: number): string | undefined {
  if (lines === 0) return undefined;
  return `  ${n(lines)} of ${n(requests)} request${requests === 1 ? '' : 's'} (${pct(lines, requests)}) had no client address: they were all decided as one client, ip:unknown, so their limits bind far earlier than the gateway's. Log the client's address (NGINX $remote_addr, Apache %a; Envoy's default format has only X-Forwarded-For, "-" at an edge Envoy: add %DOWNSTREAM_REMOTE_ADDRESS% to the format, or log JSON and name the field with --field client=NAME)`;
}

/** The note on a configuration's `penalty:` section, which replay does not apply, and on its capacity limits. */
function penaltyNote(r: ConfigReport): string[] {
  const p = r.penalty;
  const capacity = [...capacityNotes(r), ...costsNotes(r)].map((line) => `  ${line}`);
  if (p === undefined) return capacity;
  return [
    ...capacity,
    `  penalty: not replayed (a key limited ${n(p.after)} times within ${p.withinSeconds} s is blocked for ${p.blockSeconds} s, doubling up to ${p.maxBlockSeconds} s): the gateway refuses more than this replay shows`,
  ];
}

/** What the report says of lines out of time order: put back in order, beyond the window, or let go early. */
function orderLines(o: ReplayReport['outOfOrder']): string[] {
  const out: string[] = [];
  const window = `${n(o.windowSeconds)} s`;
  if (o.reordered > 0)
    out.push(
      `  ${count(o.reordered, 'line')} earlier than a line before ${o.reordered === 1 ? 'it' : 'them'} (written at the request's end, stamped at its start) ${o.reordered === 1 ? 'was' : 'were'} put back in time order (reorder window ${window})`,
    );
  if (o.lines > 0)
    out.push(
      `  ${count(o.lines, 'line')} ${o.lines === 1 ? 'was' : 'were'} earlier than the reorder window of ${window} allows (at most ${o.maxSeconds} s earlier than a line before ${o.lines === 1 ? 'it' : 'them'}) and ${o.lines === 1 ? 'was' : 'were'} decided at the later time: --reorder-window ${Math.ceil(o.maxSeconds)}s would order them`,
    );
  if (o.early > 0)
    out.push(
      `  ${count(o.early, 'line')} ${o.early === 1 ? 'was' : 'were'} decided before the reorder window of ${window} passed: the window holds at most ${MAX_HELD.toLocaleString('en-US')} lines`,
    );
  return out;
}

/**
 * The terminal form of a replay report: what was read, the totals, per tier and per policy, the keys limited most,
 * the busiest minute, and with `--against` the requests that flip.
 */
export function renderReplayText(r: ReplayReport): string {
  const out: string[] = [];
  out.push(...renderLogStats(r.logs));
  if (r.span !== undefined)
    out.push(`Time: ${r.span.from} to ${r.span.to} (${formatSeconds(r.span.seconds)})`);
  out.push(...orderLines(r.outOfOrder));
  if (r.clientsNotIp.lines > 0)
    out.push(
      `  ${n(r.clientsNotIp.lines)} request${r.clientsNotIp.lines === 1 ? '' : 's'} with a client that is no IP address (such as ${printable(JSON.stringify(r.clientsNotIp.example ?? ''))}) shared one key, ip:unknown: log the client's address (NGINX $remote_addr, Apache %a) instead of a host name`,
    );
  const missing = missingClientWarning(r.clientsMissing.lines, r.totals.requests);
  if (missing !== undefined) out.push(missing);
  out.push('');
  out.push(`Configuration ${r.config}:`);
  out.push(
    textTable(
      ['', ...COUNT_HEAD],
      [['all', ...countCells(r.totals)]],
      [false, true, true, true, true, true, true, true],
    ),
  );
  out.push(...penaltyNote(r));
  out.push('');
  out.push(...configSection(r));
  out.push('');
  const b = r.busiestMinute;
  if (b !== undefined)
    out.push(
      `Busiest minute: ${b.minute}, ${count(b.requests, 'request')} (${n(b.allowed)} allowed, ${n(b.queued)} queued, ${n(b.limited)} limited)`,
    );
  if (r.store.evictions > 0)
    out.push(
      `Store: ${n(r.store.evictions)} buckets evicted at the key cap (${n(r.store.maxTrackedKeys)}): decisions of evicted keys may differ from a gateway with more room`,
    );
  const x = r.against;
  if (x !== undefined) {
    out.push('');
    out.push(`Against ${x.config}:`);
    out.push(
      textTable(
        ['', ...COUNT_HEAD],
        [
          [r.config, ...countCells(r.totals)],
          [x.config, ...countCells(x.totals)],
        ],
        [false, true, true, true, true, true, true, true],
      ),
    );
    out.push(...penaltyNote(x));
    out.push('');
    out.push(
      `Requests that flip: ${n(x.flips.toLimited)} allowed by ${r.config} are limited by ${x.config}; ${n(x.flips.toAllowed)} limited by ${r.config} are allowed by ${x.config}.`,
    );
    if (x.flips.policies.length > 0) {
      out.push(
        textTable(
          ['policy', 'allowed -> limited', 'limited -> allowed'],
          x.flips.policies.map((p) => [p.policy, n(p.toLimited), n(p.toAllowed)]),
          [false, true, true],
        ),
      );
      out.push('');
      out.push(
        textTable(
          ['key', 'allowed -> limited', 'limited -> allowed'],
          x.flips.keys.map((k) => [k.key, n(k.toLimited), n(k.toAllowed)]),
          [false, true, true],
        ),
      );
    }
    out.push('');
    out.push(...configSection(x));
  }
  return `${out.join('\n')}\n`;
}

function formatSeconds(s: number): string {
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${(s / 60).toFixed(1)} min`;
  if (s < 172_800) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86_400).toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 })} days`;
}
