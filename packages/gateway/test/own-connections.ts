import { connect } from 'node:net';
import { client, send } from './support.js';

/**
 * A raw GET on a connection of its own (so that the kernel spreads such requests over the threads of
 * `sluice serve --threads`); resolves with the status line's code once the answer ends.
 */
export function rawGet(url: string, path: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () =>
      socket.write(`GET ${path} HTTP/1.1\r\nhost: ${hostname}\r\nconnection: close\r\n\r\n`),
    );
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      text += c;
    });
    socket.on('end', () => resolve(Number(text.slice(9, 12))));
    socket.on('error', reject);
  });
}

/**
 * `n` GET requests of `url` at once, each on a connection of its own (the kernel spreads them over the threads of
 * `sluice serve --threads`): their statuses.
 */
export function atOnce(url: string, n: number): Promise<number[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const own = client();
      try {
        return (await send(own, url)).status;
      } finally {
        await own.close();
      }
    }),
  );
}
