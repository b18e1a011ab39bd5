/**
 * One timed pass in a fresh process, printed as JSON: `replay` (the whole replay of the log under the example
 * configuration), `parse` (reading and parsing the lines only), `read` (cutting lines only), or `recommend`.
 *
 *   tsx bench/replay/replay-once.ts replay LOG
 */
import { createReadStream } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadConfigOrThrow } from '../../packages/gateway/src/config/load-config.js';
import { clfParser } from '../../packages/gateway/src/replay/clf-parser.js';
import { forEachLine } from '../../packages/gateway/src/replay/line-source.js';
import { LogRecord } from '../../packages/gateway/src/replay/log-record.js';
import { recommend } from '../../packages/gateway/src/replay/recommend.js';
import { runReplay } from '../../packages/gateway/src/replay/replay-run.js';

const EXAMPLE = fileURLToPath(new URL('../../packages/gateway/examples/rate-limits.yaml', import.meta.url));
const [mode = 'replay', file = 'replay-bench.log'] = process.argv.slice(2);
const open = () => createReadStream(file, { highWaterMark: 1 << 20 });
const logs = [{ name: file, open }];
const started = performance.now();
const cpu0 = process.cpuUsage();
let lines = 0;
if (mode === 'replay') {
  const run = await runReplay({ config: { name: 'example', config: loadConfigOrThrow(EXAMPLE) }, logs });
  lines = run.logs[0].lines;
} else if (mode === 'parse') {
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
} else if (mode === 'recommend') {
  const r = await recommend({ logs, spare: 0.01, top: 10 });
  lines = r.requests * (r.confirmation.rounds + 1);
}
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
