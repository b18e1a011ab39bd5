import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where `npm run build` writes the dashboard bundle: `<package>/dist/dashboard-assets`. The path is the same
 * from `src/dashboard` (tests, tsx) and from `dist/dashboard` (the installed gateway), two folders below the
 * package root.
 */
export const DEFAULT_ASSETS_DIR = fileURLToPath(new URL('../../dist/dashboard-assets/', import.meta.url));

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * The page may run only its own bundle and talk only to its own origin: no CDN, no inline script, no framing.
 * The token never leaves the origin, and a page that cannot be framed cannot be clickjacked into a reset.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SAFE_NAME = /^[a-z0-9][a-z0-9.-]*$/;

interface Asset {
  readonly body: Buffer;
  readonly etag: string;
  readonly mtimeMs: number;
}

/**
 * Serves the built dashboard files (`index.html`, `app.js`, `app.css`) from one folder, with ETags, the
 * content security policy and no caching beyond revalidation (a rebuilt bundle shows at the next load).
 * Only plain file names inside the folder are served, so no path can leave it.
 */
export class DashboardAssets {
  readonly #dir: string;
  readonly #cache = new Map<string, Asset>();

  /** @param dir - the folder of the built bundle; default {@link DEFAULT_ASSETS_DIR}. */
  constructor(dir: string = DEFAULT_ASSETS_DIR) {
    this.#dir = dir;
  }

  /**
   * Answers a GET or HEAD for one file of the bundle (`name` is `index.html` for the page itself).
   *
   * @returns false when there is no such file name (the caller answers 404); true when answered, including the
   * 503 that says the bundle was not built.
   */
  serve(name: string, req: IncomingMessage, res: ServerResponse): boolean {
    const type = TYPES[extname(name)];
    if (type === undefined || !SAFE_NAME.test(name)) return false;
    const asset = this.#read(name);
    if (asset === 'missing') {
      if (name !== 'index.html') return false;
      const text =
        'The dashboard bundle is not built. Run `npm run build` (it writes dist/dashboard-assets), then reload.\n';
      res.writeHead(503, {
        'content-type': 'text/plain; charset=utf-8',
        'cache-control': 'no-store',
        'content-length': Buffer.byteLength(text),
      });
      res.end(req.method === 'HEAD' ? undefined : text);
      return true;
    }
    const headers: Record<string, string | number> = {
      'content-type': type,
      'cache-control': 'no-cache',
      etag: asset.etag,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    };
    if (name.endsWith('.html')) {
      headers['content-security-policy'] = DASHBOARD_CSP;
      headers['x-frame-options'] = 'DENY';
    }
    if (req.headers['if-none-match'] === asset.etag) {
      res.writeHead(304, headers);
      res.end();
      return true;
    }
    headers['content-length'] = asset.body.length;
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : asset.body);
    return true;
  }

  #read(name: string): Asset | 'missing' {
    const path = join(this.#dir, name);
    let mtimeMs: number;
    try {
      mtimeMs = statSync(path).mtimeMs;
    } catch {
      return 'missing';
    }
    const cached = this.#cache.get(name);
    if (cached !== undefined && cached.mtimeMs === mtimeMs) return cached;
    const body = readFileSync(path);
    const asset = {
      body,
      mtimeMs,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
    };
    this.#cache.set(name, asset);
    return asset;
  }
}
