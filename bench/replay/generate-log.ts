/**
 * Writes a synthetic NGINX `combined` access log for the replay benchmark: `lines` requests over `seconds` of log
 * time from `clients` client addresses, clients and paths drawn from Zipf distributions (s = 1: a few clients and
 * paths are hot, most are rare), paths from the example configuration's endpoints and a wider API around them.
 * Deterministic for a given seed.
 *
 *   tsx bench/replay/generate-log.ts OUT.log [lines] [clients] [seconds]
 */
import { createWriteStream } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A seeded generator (mulberry32): the same log for the same seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Draws ranks 0..n-1 with probability proportional to 1/(rank+1), by inverting the cumulative table. */
function zipf(n: number, rnd: () => number): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) {
    sum += 1 / (i + 1);
    cdf[i] = sum;
  }
  return () => {
    const x = rnd() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

const PATHS = [
  (id: number) => `/api/items/${id}`,
  () => '/api/items',
  (id: number) => `/api/risk/simulation/${id}`,
  (id: number) => `/api/users/${id}/profile`,
  () => '/api/search?q=rates',
  (id: number) => `/api/risk/simulation/studio/${id}`,
  (id: number) => `/api/orders/${id}`,
  () => '/api/health',
  (id: number) => `/api/documents/6f1c${String(id).padStart(4, '0')}-1b2c-4d3e-8f90-0a1b2c3d4e5f`,
  () => '/system/airgap/seal',
];
const METHODS = ['GET', 'GET', 'GET', 'POST', 'GET', 'POST', 'PUT', 'GET', 'GET', 'POST'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function clfTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

/**
 * A surge: between two fractions of the log's time, a share of the requests comes from a few scripted clients
 * hammering the studio endpoint (the README's picture shows it).
 */
export interface Surge {
  readonly from: number;
  readonly to: number;
  readonly share: number;
  readonly clients: number;
}

/**
 * Writes the log.
 *
 * @returns once the file is complete.
 */
export async function generateLog(
  out: string,
  lines = 1_000_000,
  clients = 50_000,
  seconds = 3600,
  seed = 27,
  surge?: Surge,
): Promise<void> {
  const rnd = random(seed);
  const client = zipf(clients, rnd);
  const path = zipf(PATHS.length, rnd);
  const ips = Array.from({ length: clients }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  const start = Date.UTC(2026, 11, 1, 9, 0, 0);
  const file = createWriteStream(out);
  let buf = '';
  for (let i = 0; i < lines; i++) {
    const t = start + Math.floor((i / lines) * seconds * 1000);
    const p = path();
    const id = 1 + Math.floor(rnd() * 5000);
    const u = i / lines;
    // Without a surge no extra random number is drawn, so the default log stays the same.
    if (surge !== undefined && u >= surge.from && u < surge.to && rnd() < surge.share) {
      const ip = `192.0.2.${1 + Math.floor(rnd() * surge.clients)}`;
      buf += `${ip} - - [${clfTime(t)}] "POST /api/risk/simulation/studio/${id} HTTP/1.1" 200 64 "-" "script/1.0"\n`;
    } else
      buf += `${ips[client()]} - - [${clfTime(t)}] "${METHODS[p]} ${PATHS[p](id)} HTTP/1.1" 200 ${100 + (i % 900)} "-" "bench/1.0"\n`;
    if (buf.length > 1 << 20) {
      if (!file.write(buf)) await new Promise<void>((r) => file.once('drain', () => r()));
      buf = '';
    }
  }
  file.write(buf);
  await new Promise<void>((resolve, reject) => file.end((e?: Error | null) => (e ? reject(e) : resolve())));
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [out = 'replay-bench.log', lines, clients, seconds] = process.argv.slice(2);
  await generateLog(out, Number(lines ?? 1_000_000), Number(clients ?? 50_000), Number(seconds ?? 3600));
}
