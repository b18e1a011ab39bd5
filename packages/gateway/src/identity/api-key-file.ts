import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ErrorCode, SluiceError } from 'sluice';
import { parse } from 'yaml';
import type { Identity } from './identity.js';
import { tenantId } from './tenant-id.js';

/** One entry of the API key file. Only the hash of a key is ever stored. */
export interface ApiKeyEntry {
  /** SHA-256 of the key, 64 lower-case hex digits (`sluice hash-key` prints it). */
  readonly hash: string;
  readonly tenant: string | undefined;
  readonly client: string | undefined;
  readonly tier: string | undefined;
  /** A label for people; never used as a key. */
  readonly name: string | undefined;
}

/**
 * The SHA-256 of an API key as 64 hex digits: what the key file stores and what `apikey:<hash>` carries. Keys
 * are long random strings, so a fast unsalted hash is enough to keep the file from holding usable secrets.
 *
 * @param key - the key: a string is hashed as its UTF-8 bytes, bytes as they are.
 */
export function hashApiKey(key: string | Uint8Array): string {
  return createHash('sha256').update(key).digest('hex');
}

const ENTRY_KEYS = new Set(['hash', 'tenant', 'client', 'tier', 'name']);

/**
 * The API keys of a file (YAML or JSON): `keys: [{ hash, tenant, client, tier, name }]`.
 *
 * @throws SluiceError `ERR_INVALID_CONFIG` listing every bad entry, when the file cannot be read or is invalid.
 */
export class ApiKeyFile {
  readonly #byHash = new Map<string, ApiKeyEntry>();

  /** @param file - the path of the key file. */
  constructor(readonly file: string) {
    let data: unknown;
    try {
      data = parse(readFileSync(file, 'utf8'));
    } catch (cause) {
      throw new SluiceError(
        ErrorCode.InvalidConfig,
        `cannot read API key file ${file}: ${(cause as Error).message}`,
        { file },
        { cause },
      );
    }
    const list = (data as { keys?: unknown } | null)?.keys;
    const problems: string[] = [];
    if (!Array.isArray(list)) problems.push('keys: must be a list of { hash, tenant, client, tier, name }');
    for (const [i, raw] of (Array.isArray(list) ? list : []).entries()) {
      const e = (raw ?? {}) as Record<string, unknown>;
      for (const k of Object.keys(e)) if (!ENTRY_KEYS.has(k)) problems.push(`keys[${i}].${k}: unknown key`);
      const hash = typeof e.hash === 'string' ? e.hash.replace(/^sha256:/, '').toLowerCase() : '';
      if (!/^[0-9a-f]{64}$/.test(hash))
        problems.push(`keys[${i}].hash: must be 64 hex digits (SHA-256), got ${JSON.stringify(e.hash)}`);
      for (const k of ['tenant', 'client', 'tier', 'name']) {
        if (e[k] !== undefined && (typeof e[k] !== 'string' || e[k] === ''))
          problems.push(`keys[${i}].${k}: must be a non-empty string`);
      }
      if (this.#byHash.has(hash)) problems.push(`keys[${i}].hash: listed twice`);
      this.#byHash.set(
        hash,
        Object.freeze({
          hash,
          tenant: tenantId(e.tenant as string | undefined),
          client: e.client as string | undefined,
          tier: e.tier as string | undefined,
          name: e.name as string | undefined,
        }),
      );
    }
    if (problems.length > 0) {
      throw new SluiceError(
        ErrorCode.InvalidConfig,
        `invalid API key file ${file}:\n${problems.join('\n')}`,
        { file, violations: problems },
      );
    }
  }

  /** The entry named `name` (the `name` field), for operator tools; `undefined` when none has it. */
  named(name: string): ApiKeyEntry | undefined {
    for (const e of this.#byHash.values()) if (e.name === name) return e;
    return undefined;
  }

  /** Number of keys. */
  get size(): number {
    return this.#byHash.size;
  }

  /**
   * The identity of a presented key, or `undefined` when the key is unknown.
   *
   * @param key - the key as presented in the request (a header value: its bytes read as latin1).
   */
  identify(key: string): Identity | undefined {
    // Node.js reads header bytes as latin1: reading them back gives the bytes the client sent, so a key that is
    // not ASCII, sent as UTF-8, has the hash `sluice hash-key` printed for it. An ASCII key is unchanged.
    const hash = hashApiKey(Buffer.from(key, 'latin1'));
    const e = this.#byHash.get(hash);
    if (e === undefined) return undefined;
    return {
      source: 'apikey',
      tenant: e.tenant,
      client: e.client,
      user: undefined,
      tier: e.tier,
      apiKeyHash: hash,
    };
  }
}
