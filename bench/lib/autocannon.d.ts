/**
 * The part of autocannon's API the benchmarks use (the package ships no types, and @types/autocannon would be
 * one more dependency for a handful of fields). Shared by every benchmark that loads a server.
 */
declare module 'autocannon' {
  interface Histogram {
    readonly average: number;
    readonly mean: number;
    readonly stddev: number;
    readonly min: number;
    readonly max: number;
    readonly total: number;
    readonly p50: number;
    readonly p90: number;
    readonly p99: number;
    readonly p99_9: number;
  }
  interface Options {
    readonly url: string;
    readonly connections?: number;
    readonly duration?: number;
    readonly amount?: number;
    readonly pipelining?: number;
    readonly overallRate?: number;
    readonly method?: string;
    readonly headers?: Record<string, string>;
    readonly body?: string;
    readonly timeout?: number;
  }
  interface Result {
    readonly requests: Histogram;
    readonly latency: Histogram;
    readonly throughput: Histogram;
    readonly duration: number;
    readonly errors: number;
    readonly timeouts: number;
    readonly non2xx: number;
    readonly '2xx': number;
    readonly '4xx': number;
    readonly '5xx': number;
  }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
