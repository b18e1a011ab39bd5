/** Key sets and access sequences of the engine benchmark: `1`, `10k`, `1m`, with `-zipf` for a skewed pattern. */

/** Deterministic PRNG so every contender sees the same sequence. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Keys and a power-of-two-long sequence of key indices for a workload name. */
export function keySequence(workload: string): { keys: string[]; seq: Int32Array } {
  const [size, shape] = workload.split('-');
  const n = size === '1' ? 1 : size === '10k' ? 10_000 : size === '1m' ? 1_000_000 : Number.NaN;
  if (!Number.isFinite(n)) throw new Error(`unknown workload ${workload}`);
  const keys = Array.from({ length: n }, (_, i) => `user:${i}`);
  const seq = new Int32Array(1 << 20);
  const random = mulberry32(42);
  if (shape === 'zipf') {
    // Zipf with s = 1: inverse CDF by binary search over cumulative weights.
    const cdf = new Float64Array(n);
    let sum = 0;
    for (let i = 0; i < n; i++) cdf[i] = sum += 1 / (i + 1);
    for (let j = 0; j < seq.length; j++) {
      const u = random() * sum;
      let lo = 0;
      let hi = n - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (cdf[mid] < u) lo = mid + 1;
        else hi = mid;
      }
      seq[j] = lo;
    }
  } else {
    for (let j = 0; j < seq.length; j++) seq[j] = Math.floor(random() * n);
  }
  return { keys, seq };
}
