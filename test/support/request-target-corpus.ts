/**
 * Request targets that try to reach a protected route past the endpoint rules: the attacks seen in the wild
 * (fragments, encoded slashes, dot segments hidden behind an exempt prefix, backslashes, `;` parameters) and a
 * fixed-seed fast-check sample of their combinations. Targets are sent byte for byte over a raw socket
 * ({@link TargetClient}), because fetch and undici's URL handling would normalize them first.
 *
 * @example
 * ```ts
 * for (const c of targetCorpus()) {
 *   const r = await client.send(c.method, c.target);
 *   // r.headers['x-route'] names the route that served it
 * }
 * ```
 */
import fc from 'fast-check';
import { OneSocket, type RawResponse } from './one-socket.js';

/** The protected route a target aims at. */
export type TargetAim = 'seal' | 'studio';

/** The path pattern of the endpoint rule that guards each protected route (the same in every suite). */
export const GUARD_PATTERNS: Readonly<Record<TargetAim, string>> = Object.freeze({
  seal: '/system/airgap/seal',
  studio: '/api/risk/simulation/studio/*',
});

/** One request of the corpus. */
export interface TargetCase {
  readonly method: 'GET' | 'POST';
  readonly target: string;
  readonly aim: TargetAim;
  /** `known` for an attack from the list, `generated` for the fast-check sample. */
  readonly source: 'known' | 'generated';
}

/** The known attack shapes (and their neighbours), each as the bytes of the request target. */
export const KNOWN_ATTACKS: readonly (readonly ['GET' | 'POST', string, TargetAim])[] = [
  ['POST', '/system/airgap/seal#1', 'seal'],
  ['POST', '/system/airgap/seal?x=1#1', 'seal'],
  ['POST', '/system/airgap%2Fseal', 'seal'],
  ['POST', '/system/airgap%2fseal', 'seal'],
  ['POST', '/system%2Fairgap%2Fseal', 'seal'],
  ['GET', '/.well-known/..%2Fsystem%2Fairgap%2Fseal', 'seal'],
  ['POST', '/.well-known/..%2Fsystem%2Fairgap%2Fseal', 'seal'],
  ['GET', '/.well-known/../system/airgap/seal', 'seal'],
  ['GET', '/.well-known/%2e%2e/system/airgap/seal', 'seal'],
  ['GET', '/.well-known/x/../../system/airgap/seal', 'seal'],
  ['GET', '/.well-known/..;/system/airgap/seal', 'seal'],
  ['GET', '/.well-known/..\\system\\airgap\\seal', 'seal'],
  ['GET', '/health/..%2Fsystem/airgap/seal', 'seal'],
  ['GET', '/health/../system/airgap/seal', 'seal'],
  ['POST', '/x/..%2Fsystem/airgap/seal', 'seal'],
  ['POST', '/x/..%2fsystem/airgap/seal', 'seal'],
  ['POST', '/x/..%5Csystem/airgap/seal', 'seal'],
  ['POST', '/system\\airgap\\seal', 'seal'],
  ['POST', '/x/..\\system/airgap/seal', 'seal'],
  ['POST', '/system%5Cairgap%5Cseal', 'seal'],
  ['POST', '/system/airgap/seal;x', 'seal'],
  ['POST', '/system/airgap/seal;x=1', 'seal'],
  ['POST', '/system/airgap/seal;', 'seal'],
  ['POST', '/system/airgap/seal/;x', 'seal'],
  ['POST', '/system/airgap;x=1/seal', 'seal'],
  ['POST', '/system/airgap/seal;jsessionid=0123?x=1', 'seal'],
  ['POST', '/system;x/airgap;y=1/seal', 'seal'],
  ['POST', '/x/..;/system/airgap/seal', 'seal'],
  ['POST', '/system/airgap/%73eal', 'seal'],
  ['POST', '/system/airgap/sea%6C', 'seal'],
  ['POST', '/%73ystem/%61irgap/%73eal', 'seal'],
  ['POST', '/SYSTEM/AIRGAP/SEAL', 'seal'],
  ['POST', '/System/Airgap/Seal', 'seal'],
  ['POST', '/system/airgap/seal/', 'seal'],
  ['POST', '//system//airgap//seal', 'seal'],
  ['POST', '/system/./airgap/seal', 'seal'],
  ['POST', '/system/airgap/./seal', 'seal'],
  ['POST', '/x/../system/airgap/seal', 'seal'],
  ['POST', '/system/airgap/%2e%2E/airgap/seal', 'seal'],
  ['POST', '/system/airgap/.%2e/airgap/seal', 'seal'],
  ['POST', '/%2e/system/airgap/seal', 'seal'],
  ['POST', '/system/airgap/%252Fseal', 'seal'],
  ['POST', '/system%252Fairgap%252Fseal', 'seal'],
  ['POST', '/system/airgap/seal%3Fx', 'seal'],
  ['POST', '/system/airgap/seal%23x', 'seal'],
  ['POST', '/system/airgap/seal?', 'seal'],
  ['POST', '/system/airgap/seal.', 'seal'],
  ['POST', 'http://127.0.0.1/system/airgap/seal', 'seal'],
  ['POST', 'http://evil.example/system/airgap/seal', 'seal'],
  ['POST', '/system/airgap/seal%', 'seal'],
  ['POST', '/system/airgap/seal%zz', 'seal'],
  ['POST', '/api/risk/simulation/studio/run', 'studio'],
  ['POST', '/api/risk/simulation/studio%2Frun', 'studio'],
  ['POST', '/api/risk/simulation/x/..%2Fstudio/run', 'studio'],
  ['POST', '/api/risk/simulation/%73tudio/run', 'studio'],
  ['POST', '/api/risk/simulation/STUDIO/run', 'studio'],
  ['POST', '/api/risk//simulation/studio/./run', 'studio'],
  ['POST', '/api/risk/simulation/studio;x/run', 'studio'],
  ['POST', '/api/risk/simulation/studio/run;jsessionid=1', 'studio'],
  ['GET', '/api/risk/simulation/studio/', 'studio'],
  ['GET', '/api/risk/simulation/studio', 'studio'],
  ['GET', '/api/risk/simulation/studio//', 'studio'],
  ['GET', '/api/risk/simulation/studio/x/..', 'studio'],
  ['GET', '/api/risk/simulation/studio/%2e', 'studio'],
  ['GET', '/api/risk/simulation/studio/.', 'studio'],
  ['GET', '/api/risk/simulation/studio/x/%2e%2e', 'studio'],
  ['GET', '/api/risk/simulation/STUDIO/', 'studio'],
  ['GET', '/api/risk/simulation/studio;x/', 'studio'],
  ['GET', '/api/risk/simulation/studio;x', 'studio'],
  ['POST', '/api/risk/simulation\\studio\\run', 'studio'],
  ['GET', '/.well-known/..%2Fapi%2Frisk%2Fsimulation%2Fstudio%2Frun', 'studio'],
  ['GET', '/.well-known/../api/risk/simulation/studio/run', 'studio'],
];

const WORDS: Record<TargetAim, readonly string[]> = {
  seal: ['system', 'airgap', 'seal'],
  studio: ['api', 'risk', 'simulation', 'studio', 'run'],
};

const SEPARATORS = [
  '/',
  '/',
  '/',
  '//',
  '/./',
  '/%2e/',
  '/x/../',
  '/x/%2e%2E/',
  '/x/..;/',
  '%2F',
  '%2f',
  '\\',
  '%5C',
  '/;/',
];
const PREFIXES = ['', '', '', '/.well-known/..', '/.well-known/%2e%2e', '/health/..', '/.well-known/x/../..'];
const SUFFIXES = ['', '', '/', '#1', '?q=1', ';x', '/.', '%23', '?x#y', '%2F', '/%2e'];

/** One spelling of a word: as is, upper case, mixed case, one character percent-encoded (once or twice), `;x`. */
function spelling(word: string): fc.Arbitrary<string> {
  const hex = (c: string, lower: boolean) => {
    const h = c.charCodeAt(0).toString(16).padStart(2, '0');
    return `%${lower ? h : h.toUpperCase()}`;
  };
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant(word) },
    fc.constant(word.toUpperCase()),
    fc
      .array(fc.boolean(), { minLength: word.length, maxLength: word.length })
      .map((up) => [...word].map((c, i) => (up[i] ? c.toUpperCase() : c)).join('')),
    fc
      .record({ at: fc.nat(word.length - 1), lower: fc.boolean(), twice: fc.boolean() })
      .map(
        ({ at, lower, twice }) =>
          word.slice(0, at) +
          (twice ? `%25${hex(word[at], lower).slice(1)}` : hex(word[at], lower)) +
          word.slice(at + 1),
      ),
    fc.constant(`${word};x`),
  );
}

function generated(aim: TargetAim): fc.Arbitrary<TargetCase> {
  const words = WORDS[aim];
  return fc
    .record({
      method: fc.constantFrom<'GET' | 'POST'>('POST', 'POST', 'GET'),
      prefix: fc.constantFrom(...PREFIXES),
      parts: fc.tuple(...words.map((w) => fc.tuple(fc.constantFrom(...SEPARATORS), spelling(w)))),
      suffix: fc.constantFrom(...SUFFIXES),
    })
    .map(({ method, prefix, parts, suffix }) => {
      let target = prefix;
      for (const [i, [sep, word]] of parts.entries()) target += (i === 0 && prefix === '' ? '/' : sep) + word;
      return { method, target: target + suffix, aim, source: 'generated' as const };
    });
}

/**
 * The corpus: every known attack, then a fixed-seed sample of generated combinations (bounded, so the suites stay
 * fast), without duplicates.
 *
 * @param count - generated cases per aim.
 */
export function targetCorpus(count = 30, seed = 20_251_117): TargetCase[] {
  const out: TargetCase[] = KNOWN_ATTACKS.map(([method, target, aim]) => ({
    method,
    target,
    aim,
    source: 'known' as const,
  }));
  const seen = new Set(out.map((c) => `${c.method} ${c.target}`));
  for (const aim of ['seal', 'studio'] as const) {
    for (const c of fc.sample(generated(aim), { seed: seed + aim.length, numRuns: count })) {
      const id = `${c.method} ${c.target}`;
      if (!seen.has(id)) {
        seen.add(id);
        out.push(c);
      }
    }
  }
  return out;
}

/**
 * Sends requests with the target exactly as given, over one kept-alive connection per origin that is opened
 * again whenever the server closes it (servers close after refusing a malformed target). `close()` ends it.
 */
export class TargetClient {
  readonly #origin: string;
  #socket: OneSocket | undefined;

  /** @param origin - `http://127.0.0.1:<port>` */
  constructor(origin: string) {
    this.#origin = origin;
  }

  /** Sends one request with an empty body and reads its whole answer. */
  async send(
    method: string,
    target: string,
    headers: Readonly<Record<string, string>> = {},
  ): Promise<RawResponse> {
    if (this.#socket === undefined || this.#socket.closed) this.#socket = await OneSocket.open(this.#origin);
    const r = await this.#socket.request(method, target, { headers: { 'content-length': '0', ...headers } });
    if (/close/i.test(r.headers.connection ?? '')) this.close();
    return r;
  }

  /** Ends the connection. */
  close(): void {
    this.#socket?.close();
    this.#socket = undefined;
  }
}

/** Sends one request on a fresh connection (see {@link TargetClient} for many). */
export async function sendTarget(
  origin: string,
  method: string,
  target: string,
  headers: Readonly<Record<string, string>> = {},
): Promise<RawResponse> {
  const client = new TargetClient(origin);
  try {
    return await client.send(method, target, { connection: 'close', ...headers });
  } finally {
    client.close();
  }
}

/** The endpoint rule that guards a protected route: its policy as headers name it. */
export interface GuardingRule {
  readonly policy: string;
  readonly limit: number;
  readonly window: number;
}

/**
 * Why an answer from a protected route shows that its rule did not count the request, or `undefined` when it
 * did: the rule's policy is in `RateLimit-Policy` and its `RateLimit` item has `expectRemaining` left (when
 * given), so the bucket went down.
 */
export function uncountedHit(
  r: RawResponse,
  rule: GuardingRule,
  expectRemaining?: number,
): string | undefined {
  const policy = r.headers['ratelimit-policy'];
  if (policy === undefined) return 'exempt from limiting (no RateLimit-Policy)';
  if (!policy.includes(`"${rule.policy}";q=${rule.limit};w=${rule.window}`)) {
    return `not counted by its rule (RateLimit-Policy: ${policy})`;
  }
  if (expectRemaining === undefined) return undefined;
  const item = (r.headers.ratelimit ?? '').split(',').find((i) => i.trim().startsWith(`"${rule.policy}";`));
  const left = item === undefined ? undefined : /;r=(\d+)/.exec(item)?.[1];
  return left === String(expectRemaining)
    ? undefined
    : `its bucket did not go down by one (RateLimit: ${r.headers.ratelimit ?? '-'})`;
}
