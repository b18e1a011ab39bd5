/**
 * A static file server for the built documentation site on loopback, for the site's browser test and its picture:
 * `/a/` serves `/a/index.html`, anything outside the folder or missing is a 404, as a static host would answer.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize } from 'node:path';

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.woff2': 'font/woff2',
};

/** A running server: its origin and how to stop it. */
export interface StaticSite {
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  close(): Promise<void>;
}

/** The file a URL path names below `root` (`/a/` is `/a/index.html`), or undefined. */
export function fileOf(root: string, path: string): string | undefined {
  const decoded = decodeURIComponent(path);
  const file = normalize(join(root, decoded.endsWith('/') ? `${decoded}index.html` : decoded));
  if (!file.startsWith(root)) return undefined;
  return existsSync(file) && statSync(file).isFile() ? file : undefined;
}

/** Serves `root` on 127.0.0.1 at a free port. */
export async function serveStatic(root: string): Promise<StaticSite> {
  const server = createServer((req, res) => {
    const file = fileOf(root, new URL(req.url ?? '/', 'http://x').pathname);
    if (file === undefined) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
