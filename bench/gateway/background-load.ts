/**
 * A steady background load for the gateway benchmark's latency rows, in its own process so that the latency probe
 * (in the benchmark process) never waits behind the load generator's own event loop.
 *
 * Requests are spread evenly: every millisecond the requests due by then are sent (two per tick at 2,000 per
 * second), over a pool of 8 keep-alive connections. autocannon's fixed-rate mode was used before; it sends in
 * bursts, and a probe request arriving behind a burst measured the burst, not the proxy.
 *
 *   node --import tsx bench/gateway/background-load.ts <url> <requests per second> <seconds>
 * Prints `started`, then one JSON line with the requests per second achieved and the errors.
 */
import { Pool } from 'undici';

const [url, rateText, secondsText] = process.argv.slice(2);
const rate = Number(rateText);
const seconds = Number(secondsText);
const target = new URL(url);
const pool = new Pool(target.origin, { connections: 8, pipelining: 1 });
const path = target.pathname + target.search;

let sent = 0;
let done = 0;
let errors = 0;

function one(): void {
  sent++;
  pool.request({ path, method: 'GET' }).then(
    async (res) => {
      await res.body.dump();
      if (res.statusCode >= 400) errors++;
      done++;
    },
    () => {
      errors++;
      done++;
    },
  );
}

console.log('started');
const t0 = performance.now();
const end = t0 + seconds * 1000;
await new Promise<void>((resolve) => {
  const tick = () => {
    const now = performance.now();
    const due = Math.min(Math.floor(((now - t0) / 1000) * rate), Math.floor(seconds * rate));
    while (sent < due) one();
    if (now >= end) resolve();
    else setTimeout(tick, 1);
  };
  tick();
});
while (done < sent) await new Promise((r) => setTimeout(r, 5));
const elapsed = (performance.now() - t0) / 1000;
await pool.close();
console.log(JSON.stringify({ rps: done / elapsed, errors }));
