/**
 * The ceiling of a reverse proxy on Node.js's HTTP stack, for the gateway benchmark: node:http in front, an
 * undici Pool behind, the same dispatch-handler forwarding the gateway uses, and nothing else (no limiting, no
 * identity, no forwarding headers, no metrics, no logs). Whatever the gateway loses against NGINX beyond this
 * process's loss is the gateway's own doing.
 *
 * Given a third argument, a JSON object of response fields (the rate-limit fields the gateway answered one request
 * with), it also carries the gateway's header lines without doing the gateway's work: the forwarding fields and a
 * new request id upstream, the request id and those fields back to the client. The difference between the two
 * bare proxies is what the header bytes cost Node.js and undici; the rest of the gateway's extra CPU is its own code.
 *
 *   node --import tsx bench/gateway/bare-proxy.ts <upstream URL> <port> ['{"RateLimit":"..."}']
 */
import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import { Pool } from 'undici';

const [upstream, port, fields] = process.argv.slice(2);
const pool = new Pool(upstream, { connections: 128, pipelining: 1 });
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);
const uncork = (res: ServerResponse) => res.uncork();
const extra =
  fields === undefined ? undefined : Object.entries(JSON.parse(fields) as Record<string, string>).flat();

const server = createServer((req, res) => {
  const headers: Record<string, string> = {};
  for (const k in req.headers) if (!HOP.has(k) && k !== 'host') headers[k] = req.headers[k] as string;
  let id = '';
  if (extra !== undefined) {
    id = randomUUID();
    const peer = req.socket.remoteAddress ?? '';
    const host = req.headers.host ?? '';
    headers['x-forwarded-for'] = peer;
    headers.forwarded = `for=${peer};proto=http;host="${host}"`;
    headers['x-forwarded-proto'] = 'http';
    headers['x-forwarded-host'] = host;
    headers['x-request-id'] = id;
  }
  pool.dispatch(
    { path: req.url ?? '/', method: req.method as 'GET', headers, body: null },
    {
      onRequestStart() {},
      onResponseStart(_c, status, upHeaders) {
        const out: string[] = [];
        for (const k in upHeaders) if (!HOP.has(k)) out.push(k, upHeaders[k] as string);
        if (extra !== undefined) {
          out.push('x-request-id', id);
          for (const v of extra) out.push(v);
        }
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
