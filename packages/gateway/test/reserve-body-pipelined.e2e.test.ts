/**
 * A reservation that reads a field of the JSON request body (`cost.reserve.field`) reads the body before
 * admission and puts it back. A client that pipelines its requests sends the next body before the gateway looks at
 * it: by then that body is whole, and it must still reach the upstream.
 */

import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startGateway, startUpstream, tempDir } from './support.js';

const CONFIG = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 6000 }
  endpoints:
    - pattern: /v1/chat/completions
      name: llm-tokens
      limit: 10000
      window: 60s
      cost:
        json: usage.total_tokens
        reserve: { field: max_tokens, default: 100, maxBytes: 1kb }
`;

/** Sends the requests in one write and reads until the gateway closes the connection. */
function pipelined(port: number, requests: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const s = connect(port, '127.0.0.1', () => s.write(requests.join('')));
    s.on('data', (d) => {
      out += d.toString();
    });
    s.on('error', reject);
    s.on('close', () => resolve(out));
  });
}

describe('a reservation read from the body, with pipelined requests', () => {
  it('forwards every pipelined body whole and answers every request', async () => {
    const { dir, cleanup } = tempDir();
    const upstream = await startUpstream();
    const bodies: string[] = [];
    upstream.handler = (req, res) => {
      let b = '';
      req.on('data', (c: Buffer) => {
        b += c.toString();
      });
      req.on('end', () => {
        bodies.push(b);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ usage: { total_tokens: 3 } }));
      });
    };
    const t = await startGateway(join(dir, 'pipe.yaml'), {
      yaml: `${CONFIG}server:\n  bodyTimeout: 2s\nupstream:\n  url: ${upstream.url}\n  responseTimeout: 3s\n`,
    });
    try {
      const port = Number(new URL(t.gateway.url).port);
      const post = (tokens: number, close = false) => {
        const body = JSON.stringify({ max_tokens: tokens });
        return `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${close ? 'Connection: close\r\n' : ''}\r\n${body}`;
      };
      const out = await pipelined(port, [post(7), post(8), post(9, true)]);
      expect(out.match(/HTTP\/1\.1 \d+/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 200']);
      expect(bodies).toEqual(['{"max_tokens":7}', '{"max_tokens":8}', '{"max_tokens":9}']);
    } finally {
      await t.gateway.close();
      await upstream.close();
      cleanup();
    }
  });

  it('streams the body of a request no reserving rule matches, without waiting for it first', async () => {
    const { dir, cleanup } = tempDir();
    const upstream = await startUpstream();
    // The upstream learns of the request while its body is still on its way: the gateway forwarded it at once.
    let arrived: () => void = () => {};
    const reached = new Promise<void>((r) => {
      arrived = r;
    });
    upstream.handler = (req, res) => {
      arrived();
      let b = '';
      req.on('data', (c: Buffer) => {
        b += c.toString();
      });
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`got ${b}`);
      });
    };
    // A body deadline far beyond the test's own: a gateway that held the body back would still be waiting.
    const t = await startGateway(join(dir, 'other.yaml'), {
      yaml: `${CONFIG}server:\n  bodyTimeout: 300s\nupstream:\n  url: ${upstream.url}\n`,
    });
    const s = connect(Number(new URL(t.gateway.url).port), '127.0.0.1');
    try {
      let out = '';
      s.on('data', (d) => {
        out += d.toString();
      });
      const body = JSON.stringify({ max_tokens: 5, note: 'streamed' });
      const head = `POST /v1/other HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
      s.write(head + body.slice(0, 10));
      await reached;
      const closed = new Promise<void>((r) => s.on('close', () => r()));
      s.write(body.slice(10));
      await closed;
      expect(out).toMatch(/^HTTP\/1\.1 200/);
      expect(out).toContain(`got ${body}`);
    } finally {
      s.destroy();
      await t.gateway.close();
      await upstream.close();
      cleanup();
    }
  });
});
