import { rate } from './stats.js';

/** One in-process contender: `setup` builds fresh state and returns the operation to time, given an index. */
export interface PassContender {
  readonly name: string;
  readonly setup: () => (i: number) => void;
}

/**
 * Times every contender `rounds` times, interleaved (A B C, then C B A) so that none always runs first after a
 * pause: each pass sets the contender up afresh, warms it up with 20,000 calls, then times `n` calls. Progress
 * goes to stderr.
 *
 * @param contenders - what to time.
 * @param rounds - passes per contender.
 * @param n - timed calls per pass.
 * @returns operations per second of every pass, by contender name.
 */
export function interleavedPasses(
  contenders: readonly PassContender[],
  rounds: number,
  n: number,
): Map<string, number[]> {
  const results = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  const width = Math.max(...contenders.map((c) => c.name.length));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? contenders : [...contenders].reverse();
    for (const c of order) {
      const run = c.setup();
      for (let i = 0; i < 20_000; i++) run(i);
      const start = performance.now();
      for (let i = 0; i < n; i++) run(i);
      const perSecond = n / ((performance.now() - start) / 1000);
      results.get(c.name)?.push(perSecond);
      process.stderr.write(`  ${c.name.padEnd(width)} ${rate(perSecond)}/s\n`);
    }
  }
  return results;
}
