import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/** The browser demo page an echo upstream serves at `/demo/`. */
export interface DemoPageSource {
  /** The folder of the built page (`index.html`, `app.js`). */
  readonly assetsDir: string;
  /** The gateway the page calls; read per request because the gateway starts after its upstream. */
  readonly gatewayUrl: () => string | undefined;
}

const DEMO_TYPES: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
};

/**
 * A small upstream for the demo and for trying a configuration: answers every request with a JSON echo of
 * its method, path, headers and body size, so the forwarding headers the gateway adds are visible. With a
 * `demo` page it also serves that page at `/demo/`, so a browser can try the client SDK against the gateway.
 *
 * @param host - the address to listen on (default 127.0.0.1).
 * @param port - the port (default 0: a free one).
 * @returns the server and its base URL.
 */
export async function startEchoUpstream(
  host = '127.0.0.1',
  port = 0,
  demo?: DemoPageSource,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (demo !== undefined && req.method === 'GET' && path.startsWith('/demo/')) {
      void serveDemoFile(demo, path === '/demo/' ? 'index.html' : path.slice(6)).then(
        ({ status, type, body }) => {
          res.writeHead(status, {
            'content-type': type,
            'content-length': body.length,
            'cache-control': 'no-store',
          });
          res.end(body);
        },
      );
      return;
    }
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    req.on('end', () => {
      const body = JSON.stringify(
        { echo: true, method: req.method, url: req.url, headers: req.headers, bodyBytes: bytes },
        null,
        2,
      );
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return { server, url: `http://${host}:${(server.address() as AddressInfo).port}` };
}

async function serveDemoFile(
  demo: DemoPageSource,
  name: string,
): Promise<{ status: number; type: string; body: Buffer }> {
  const type = DEMO_TYPES[name];
  if (type === undefined) return { status: 404, type: 'text/plain', body: Buffer.from('not found\n') };
  try {
    const body = await readFile(join(demo.assetsDir, name));
    if (name !== 'index.html') return { status: 200, type, body };
    const html = body
      .toString('utf8')
      .replace('%SLUICE_GATEWAY%', (demo.gatewayUrl() ?? '').replace(/["<>&]/g, ''));
    return { status: 200, type, body: Buffer.from(html) };
  } catch {
    const hint = 'The demo page is not built: run `npm run build` (or `npm start`, which builds first).\n';
    return { status: 404, type: 'text/plain; charset=utf-8', body: Buffer.from(hint) };
  }
}
