import type { ListedOverride } from '../../src/admission/override-control.js';
import type { GatewayConfig } from '../../src/config/gateway-config.js';
import type { BucketView } from '../../src/server/admin-server.js';

/** A page of the rules in force, as the overrides panel shows it. */
export interface OverridesPage {
  readonly rules: readonly ListedOverride[];
  /** Rules in force in all. */
  readonly total: number;
  /** Rules before this page. */
  readonly offset: number;
}
/** The admin token was missing or refused (HTTP 401). */
export class UnauthorizedError extends Error {
  constructor() {
    super('The admin token was refused.');
    this.name = 'UnauthorizedError';
  }
}

/** A key's buckets, as `GET /keys/<key>` returns them. */
export interface KeyInspection {
  readonly key: string;
  readonly buckets: readonly BucketView[];
}

/**
 * The admin API of the listener that served the page (same origin), with the bearer token in the
 * `Authorization` header of every call; never in a URL, so it stays out of logs and history.
 */
export class AdminApi {
  readonly #token: string;

  /** @param token - the admin bearer token. */
  constructor(token: string) {
    this.#token = token;
  }

  /** The effective configuration, secrets redacted (`GET /config`). */
  config(): Promise<GatewayConfig> {
    return this.#json<GatewayConfig>('GET', '/config');
  }

  /** A key's bucket under every policy, without taking a token (`GET /keys/<key>`). */
  inspect(key: string): Promise<KeyInspection> {
    return this.#json<KeyInspection>('GET', `/keys/${encodeURIComponent(key)}`);
  }

  /** Forgets every bucket of a key (`DELETE /keys/<key>`). */
  async reset(key: string): Promise<void> {
    await this.#call('DELETE', `/keys/${encodeURIComponent(key)}`);
  }

  /** The overrides and blocks in force (`GET /overrides`). */
  async overrides(): Promise<readonly ListedOverride[]> {
    return (await this.#json<{ overrides: ListedOverride[] }>('GET', '/overrides')).overrides;
  }

  /** One page of the overrides and blocks in force (`GET /overrides?offset=&limit=`), and how many there are. */
  async overridesPage(offset: number, limit: number): Promise<OverridesPage> {
    const r = await this.#json<{ overrides: ListedOverride[]; total: number }>(
      'GET',
      `/overrides?offset=${offset}&limit=${limit}`,
    );
    return { rules: r.overrides, total: r.total, offset };
  }

  /** Removes a rule (`DELETE /overrides?id=...`), with the reason for the audit log. */
  async removeOverride(id: string, reason: string): Promise<void> {
    await this.#call(
      'DELETE',
      `/overrides?id=${encodeURIComponent(id)}&reason=${encodeURIComponent(reason)}`,
    );
  }

  /** Sets an override or a block (`PUT /overrides`); the body as the admin API documents it. */
  async setOverride(body: Record<string, unknown>): Promise<void> {
    await this.#call('PUT', '/overrides', JSON.stringify(body));
  }

  /** The headers of an authorized call, for the event stream. */
  headers(): Record<string, string> {
    return { authorization: `Bearer ${this.#token}` };
  }

  async #json<T>(method: string, path: string): Promise<T> {
    const r = await this.#call(method, path);
    return (await r.json()) as T;
  }

  async #call(method: string, path: string, body?: string): Promise<Response> {
    const headers =
      body === undefined ? this.headers() : { ...this.headers(), 'content-type': 'application/json' };
    const r = await fetch(path, {
      method,
      headers,
      cache: 'no-store',
      ...(body === undefined ? {} : { body }),
    });
    if (r.status === 401) throw new UnauthorizedError();
    if (!r.ok) {
      let detail = `${r.status} ${r.statusText}`;
      try {
        const body = (await r.json()) as { error?: string; detail?: string };
        detail = body.detail ?? body.error ?? detail;
      } catch {
        // Not JSON: the status line says enough.
      }
      throw new Error(`${method} ${path} failed: ${detail}`);
    }
    return r;
  }
}
