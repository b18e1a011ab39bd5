/**
 * One timed pass in a fresh process, printed as JSON: `parse` (reading and parsing the lines only) or `read`
 * (cutting lines only), the parts of a replay below the command (`replay` and `recommend` are measured as the
 * built command itself, see bench/replay.bench.ts).
 *
 *   tsx bench/replay/replay-once.ts parse LOG
 */
import { clfParser } from '../../packages/gateway/src/replay/clf-parser.js';
import { forEachLine, openLog } from '../../packages/gateway/src/replay/line-source.js';
import { LogRecord } from '../../packages/gateway/src/replay/log-record.js';

const [mode = 'parse', file = 'replay-bench.log'] = process.argv.slice(2);
const open = () => openLog(file);
const started = performance.now();
const cpu0 = process.cpuUsage();
let lines = 0;
if (mode === 'parse') {
  const parse = clfParser();
  const rec = new LogRecord();
  let ok = 0;
  const r = await forEachLine(open(), (line) => {
    rec.clear();
    if (line !== undefined && parse(line, rec) === true) ok++;
  });
  lines = r.lines;
  if (ok !== lines) throw new Error(`parsed ${ok} of ${lines}`);
} else if (mode === 'read') {
  const r = await forEachLine(open(), () => {});
  lines = r.lines;
} else throw new Error(`unknown mode ${mode}: parse or read`);
const seconds = (performance.now() - started) / 1000;
const used = process.cpuUsage(cpu0);
// CPU time of this process: on a shared machine the wall time also counts the time other processes held the core.
const cpuSeconds = (used.user + used.system) / 1e6;
console.log(
  JSON.stringify({
    mode,
    lines,
    seconds,
    cpuSeconds,
    linesPerSecond: lines / seconds,
    linesPerCpuSecond: lines / cpuSeconds,
    rssMB: process.memoryUsage().rss / 2 ** 20,
    maxRssMB: process.resourceUsage().maxRSS / 1024,
  }),
);
