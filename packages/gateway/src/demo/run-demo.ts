import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { resolveCorsConfig } from '../config/cors-config.js';
import { loadConfigOrThrow } from '../config/load-config.js';
import { Gateway } from '../gateway/gateway.js';
import { startEchoUpstream } from './echo-upstream.js';

/** The example configuration (tiers and endpoint rules), shipped verbatim with the package. */
export const EXAMPLE_CONFIG = fileURLToPath(new URL('../../examples/rate-limits.yaml', import.meta.url));

/** Where `npm run build` puts the browser demo page (see demo-ui/build.ts). */
export const DEMO_ASSETS = fileURLToPath(new URL('../../dist/demo-assets', import.meta.url));

/** Options of {@link runDemo}. */
export interface DemoOptions {
  readonly host?: string;
  /** The gateway port; default 8080, or a free port when 8080 is taken. */
  readonly port?: number;
  /** Where the instructions go; default standard output. */
  readonly print?: (line: string) => void;
  /** The built browser demo page; default {@link DEMO_ASSETS}. */
  readonly demoAssets?: string;
}

/**
 * Runs the demo: the example file, unchanged, in front of a built-in echo upstream, on the memory
 * store, with an admin listener on loopback under a fresh random token. Prints the URLs and curl lines to try.
 *
 * @returns the running gateway and a function that stops gateway and upstream.
 */
export async function runDemo(
  options: DemoOptions = {},
): Promise<{ gateway: Gateway; stop: () => Promise<void> }> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const host = options.host ?? '127.0.0.1';
  let gatewayUrl: string | undefined;
  const upstream = await startEchoUpstream(host, 0, {
    assetsDir: options.demoAssets ?? DEMO_ASSETS,
    gatewayUrl: () => gatewayUrl,
  });
  const token = randomBytes(18).toString('base64url');
  const load = (port: number) =>
    loadConfigOrThrow(EXAMPLE_CONFIG, {
      overrides: { upstream: upstream.url, host, port },
      env: process.env,
    });
  const base = load(options.port ?? 8080);
  // The example file has no admin or cors section; the demo adds them so the admin API can be tried too, and a
  // browser page can read the rate-limit headers of the gateway's origin: the demo's own page (the upstream's
  // origin) and the client README's page, served from whatever origin the reader's static server has. Any origin,
  // without credentials: the demo runs on the memory store in front of an echo, with nothing a page could steal.
  const config = Object.freeze({
    ...base,
    // The admin listener stays on loopback whatever --host says: its random port is never published from a
    // container, and plain HTTP on another address would warn (W_ADMIN_PLAINTEXT_PUBLIC) at every demo.
    admin: Object.freeze({ host: host === '::1' ? host : '127.0.0.1', port: 0, token, tokenName: 'demo' }),
    cors: resolveCorsConfig({ allowedOrigins: ['*'], credentials: false }, base.server.requestIdHeader)
      .config,
    logging: Object.freeze({ level: 'warn', requests: Object.freeze({ mode: 'none', share: 0 } as const) }),
  });
  let gateway: Gateway;
  try {
    gateway = await Gateway.start({ config, watch: false });
  } catch (e) {
    if ((e as { code?: string }).code !== 'EADDRINUSE' || options.port !== undefined) throw e;
    gateway = await Gateway.start({
      config: Object.freeze({ ...config, server: Object.freeze({ ...config.server, port: 0 }) }),
      watch: false,
    });
  }
  gatewayUrl = gateway.url;
  print('sluice demo: the example configuration in front of a built-in echo upstream (memory store)');
  print(`  config:    ${EXAMPLE_CONFIG}`);
  print(`  gateway:   ${gateway.url}`);
  print(`  upstream:  ${upstream.url} (echo)`);
  print(`  health:    ${gateway.url}/health   ready: ${gateway.url}/ready   metrics: ${gateway.url}/metrics`);
  print(`  admin:     ${gateway.adminUrl} (token ${token})`);
  print(`  dashboard: ${gateway.adminUrl}/dashboard/ (enter the admin token)`);
  print(
    `  browser:   ${upstream.url}/demo/ (the client SDK and status element, calling the gateway through CORS)`,
  );
  print('');
  print('Try:');
  print(`  curl -i ${gateway.url}/api/risk/simulation/studio/run      # RateLimit and X-RateLimit-* headers`);
  print(
    `  for i in $(seq 11); do curl -s -o /dev/null -w '%{http_code}\\n' ${gateway.url}/api/risk/simulation/studio/run; done   # 10 per 60 s, then 429`,
  );
  print(`  curl -s -H 'Authorization: Bearer ${token}' ${gateway.adminUrl}/keys/ip%3A127.0.0.1`);
  print('Press Ctrl-C to stop.');
  const stop = async () => {
    await gateway.close();
    await new Promise<void>((r) => upstream.server.close(() => r()));
  };
  return { gateway, stop };
}
