import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small upstream for the demo and for trying a configuration: answers every request with a JSON echo of
 * its method, path, headers and body size, so the forwarding headers the gateway adds are visible.
 *
 * @param host - the address to listen on (default 127.0.0.1).
 * @param port - the port (default 0: a free one).
 * @returns the server and its base URL.
 */
export async function startEchoUpstream(
  host = '127.0.0.1',
  port = 0,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
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
