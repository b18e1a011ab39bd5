/**
 * The ceiling of a reverse proxy on Node.js's HTTP stack, for the gateway benchmark: node:http in front, an
 * undici Pool behind, the same dispatch-handler forwarding the gateway uses, and nothing else (no limiting, no
 * identity, no forwarding headers, no metrics, no logs). Whatever the gateway loses against NGINX beyond this
 * process's loss is the gateway's own doing.
 *
 *   node --import tsx bench/gateway/bare-proxy.ts <upstream URL> <port>
 */
import { createServer, type ServerResponse } from 'node:http';
import { Pool } from 'undici';

const [upstream, port] = process.argv.slice(2);
const pool = new Pool(upstream, { connections: 128, pipelining: 1 });
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);
const uncork = (res: ServerResponse) => res.uncork();

const server = createServer((req, res) => {
  const headers: Record<string, string> = {};
  for (const k in req.headers) if (!HOP.has(k) && k !== 'host') headers[k] = req.headers[k] as string;
  pool.dispatch(
    { path: req.url ?? '/', method: req.method as 'GET', headers, body: null },
    {
      onRequestStart() {},
      onResponseStart(_c, status, upHeaders) {
        const out: string[] = [];
        for (const k in upHeaders) if (!HOP.has(k)) out.push(k, upHeaders[k] as string);
        res.writeHead(status, out);
        res.cork();
        process.nextTick(uncork, res);
      },
      onResponseData(_c, chunk) {
        res.write(chunk);
      },
      onResponseEnd() {
        res.end();
      },
      onResponseError(_c, error) {
        res.destroy(error);
      },
    },
  );
});
server.listen(Number(port), '127.0.0.1', () => console.log('listening'));
process.once('SIGTERM', () => process.exit(0));
