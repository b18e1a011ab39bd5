import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../config/gateway-config.js';
import { createLogger } from '../log/create-logger.js';
import type { ProxyHost } from './proxy-context.js';
import { ProxyServer } from './proxy-server.js';

/** The answer a socket gets to a head it never finishes, read until the server closes. */
function answerToSlowHead(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const { port } = new URL(url);
    const s = connect(Number(port), '127.0.0.1', () => s.write('GET / HTTP/1.1\r\nhost: sluice-test\r\n'));
    let text = '';
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1');
    });
    s.on('error', reject);
    s.on('close', () => resolve(text));
  });
}

describe('the proxy listener', () => {
  it('answers a head that does not arrive in time with 408 and closes the connection', async () => {
    // A slow head never reaches the pipeline: the host is only read for its logger.
    const host = { logger: createLogger('silent') } as unknown as ProxyHost;
    const proxy = new ProxyServer(host, { tls: undefined } as GatewayConfig['server'], Date.now, {
      headersTimeoutMs: 200,
      connectionsCheckingIntervalMs: 50,
    });
    const url = await proxy.listen('127.0.0.1', 0);
    try {
      const answer = await answerToSlowHead(url);
      expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(answer.toLowerCase()).toContain('\r\nconnection: close\r\n');
    } finally {
      await proxy.close();
    }
  });
});
