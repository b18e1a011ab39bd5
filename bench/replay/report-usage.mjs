// Preloaded into a benchmarked command (`node --import ./report-usage.mjs ...`): at exit it writes the process's
// own CPU time (user + system, microseconds) and peak resident memory to stderr, one JSON line after a marker, so
// the benchmark measures the command exactly as users run it, start-up included.
import { writeSync } from 'node:fs';

const started = performance.now();
process.on('exit', () => {
  const cpu = process.cpuUsage();
  const usage = {
    seconds: (performance.now() - started) / 1000,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    maxRssMB: process.resourceUsage().maxRSS / 1024,
  };
  writeSync(2, `\nBENCH_USAGE ${JSON.stringify(usage)}\n`);
});
