/**
 * The browser demo of `sluice demo`: the client SDK and the status element against the demo gateway. A burst
 * of 12 calls on an endpoint rule of 10 per minute shows the remaining requests fall to 0 and the client retry
 * the refused calls after the gateway's Retry-After.
 */
import { createClient, defineRateLimitStatus, type RetryContext } from 'sluice/client';

const BURST = 12;
const PATH = '/api/risk/simulation/studio/run';

const configured = document.querySelector('meta[name="sluice-gateway"]')?.getAttribute('content') ?? '';
// Served through the gateway itself the placeholder may stay: the page's own origin is then the gateway.
const gateway = configured === '' || configured.startsWith('%') ? location.origin : configured;
const log = document.getElementById('log') as HTMLOListElement;
(document.getElementById('gateway') as HTMLElement).textContent = gateway;

function line(text: string, kind = ''): void {
  const li = document.createElement('li');
  li.textContent = text;
  if (kind !== '') li.className = kind;
  log.append(li);
}

let call = 0;
const numbers = new Map<string, number>();
const client = createClient({
  baseUrl: gateway,
  onRetry: (c: RetryContext) => {
    const n = numbers.get(c.url) ?? 0;
    line(
      `#${n} got ${c.response?.status ?? 'no answer'}: retry ${c.attempt + 1} in ${Math.ceil(c.delayMs / 1000)} s` +
        (c.retryAfterSeconds === undefined ? '' : ` (Retry-After: ${c.retryAfterSeconds})`),
      'retry',
    );
  },
});
defineRateLimitStatus();
(document.getElementById('status') as HTMLElement & { client: unknown }).client = client;

async function one(): Promise<void> {
  const n = ++call;
  // A distinct query per call lets the retry hook name the call; the endpoint rule matches the path alone.
  const url = `${gateway}${PATH}?call=${n}`;
  numbers.set(url, n);
  try {
    const res = await client.fetch(url);
    line(`#${n} ${res.status} RateLimit: ${res.headers.get('RateLimit') ?? '(not readable)'}`);
  } catch (e) {
    line(`#${n} gave up: ${(e as Error).message}`, 'error');
  }
}

(document.getElementById('burst') as HTMLButtonElement).addEventListener('click', () => {
  line(`sending ${BURST} requests to ${PATH}`);
  for (let i = 0; i < BURST; i++) void one();
});

(document.getElementById('one') as HTMLButtonElement).addEventListener('click', () => void one());
