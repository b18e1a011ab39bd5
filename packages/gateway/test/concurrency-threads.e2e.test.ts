import { writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rawGet } from './own-connections.js';
import { spawnSuite } from './spawn-suite.js';
import { serveArgs, spawnSluice } from './support.js';

const N = 3;
const CLIENTS = 60;
const suite = spawnSuite();
const { tmp, spawned } = suite;

describe('concurrency limits and load shedding with sluice serve --threads 2', () => {
  it('one count across the threads: never more than N in flight per key', async () => {
    const upstream = holdUpstream();
    const held = upstream.held;
    const file = join(tmp.dir, 'threads-concurrency.yaml');
    writeFileSync(
      file,
      'rateLimiting:\n  defaultTier: t\n  tiers:\n    t: { requestsPerMinute: 60000, burstLimit: 10000 }\n' +
        `  endpoints:\n    - { pattern: "/api/reports/*", name: reports, concurrent: ${N} }\n` +
        'server: { port: 1 }\nupstream: { url: "http://127.0.0.1:1" }\n',
    );
    const { p, url } = await startTwoThreads(file);
    const answers: number[] = [];
    const all = Array.from({ length: CLIENTS }, () =>
      rawGet(url, '/api/reports/q').then((s) => answers.push(s)),
    );
    // Every request but the N the upstream holds is answered while they run: 429, whichever thread took it.
    while (answers.length < CLIENTS - N) await new Promise((r) => setTimeout(r, 20));
    expect(answers).toEqual(Array(CLIENTS - N).fill(429));
    // The admitted ones may still be on their way to the upstream when the refusals are in.
    await heldReach(held, N);
    expect(held).toHaveLength(N);
    expect(upstream.most()).toBe(N);
    for (const res of held.splice(0)) res.end('done');
    await Promise.all(all);
    expect(answers.filter((s) => s === 200)).toHaveLength(N);
    // Both threads answered some, and every slot came back: N more are admitted at once.
    expect(await threadsThatAnswered(p)).toEqual(new Set([0, 1]));
    const again = Array.from({ length: N }, () => rawGet(url, '/api/reports/again'));
    while (held.length < N) await new Promise((r) => setTimeout(r, 20));
    for (const res of held.splice(0)) res.end('done');
    expect(await Promise.all(again)).toEqual(Array(N).fill(200));
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  }, 60_000);

  it('load shedding counts the process: overload.maxInFlight over both threads', async () => {
    const upstream = holdUpstream();
    const held = upstream.held;
    const file = join(tmp.dir, 'threads-overload.yaml');
    writeFileSync(
      file,
      'rateLimiting:\n  defaultTier: t\n  tiers:\n    t: { requestsPerMinute: 60000, burstLimit: 10000 }\n' +
        `overload: { maxInFlight: ${N}, reserve: 0 }\n` +
        'server: { port: 1 }\nupstream: { url: "http://127.0.0.1:1" }\n',
    );
    const { p, url } = await startTwoThreads(file);
    const answers: number[] = [];
    const all = Array.from({ length: CLIENTS }, () => rawGet(url, '/work').then((s) => answers.push(s)));
    while (answers.length < CLIENTS - N) await new Promise((r) => setTimeout(r, 20));
    expect(answers).toEqual(Array(CLIENTS - N).fill(503));
    await heldReach(held, N);
    expect(upstream.most()).toBe(N);
    for (const res of held.splice(0)) res.end('done');
    await Promise.all(all);
    expect(answers.filter((s) => s === 200)).toHaveLength(N);
    expect(await threadsThatAnswered(p)).toEqual(new Set([0, 1]));
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  }, 60_000);
});

/** Waits until the upstream holds `n` requests, or 10 s. */
async function heldReach(held: readonly ServerResponse[], n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (held.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

/** An upstream that holds every request until the test ends it, and the most it held at once. */
function holdUpstream(): { readonly held: ServerResponse[]; most(): number } {
  let inFlight = 0;
  let most = 0;
  const held: ServerResponse[] = [];
  suite.upstream.handler = (req: IncomingMessage, res: ServerResponse) => {
    inFlight++;
    most = Math.max(most, inFlight);
    res.on('close', () => inFlight--);
    req.resume();
    held.push(res);
  };
  return { held, most: () => most };
}

/** `sluice serve --threads 2` with the file, once both threads listen. */
async function startTwoThreads(file: string) {
  const p = spawnSluice(process.execPath, serveArgs(file, suite.upstream.url, 2), spawned, suite.bin);
  const { url } = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
  await p.waitFor(/"thread":1.*sluice gateway listening/);
  return { p, url };
}

/**
 * The threads that wrote a request line, once two have or after 20 s: each thread writes its lines in batches
 * (up to a tenth of a second after the answers).
 */
async function threadsThatAnswered(p: {
  readonly lines: readonly string[];
}): Promise<Set<number | undefined>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const threads = new Set(
      p.lines
        .filter((l) => l.startsWith('{') && l.includes('"msg":"request"'))
        .map((l) => (JSON.parse(l) as { thread?: number }).thread),
    );
    if (threads.size >= 2 || Date.now() > deadline) return threads;
    await new Promise((r) => setTimeout(r, 50));
  }
}
