import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ErrorCode, SluiceError } from 'sluice';
import { LineCounter, parseDocument } from 'yaml';
import { formatViolations, type Violation } from '../config/violation.js';
import type { Identity } from './identity.js';
import { isControl, MAX_IDENTITY_LENGTH } from './identity-value.js';
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
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (cause) {
      throw unreadable(file, (cause as Error).message, cause);
    }
    const lineCounter = new LineCounter();
    const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
    if (doc.errors.length > 0) throw unreadable(file, doc.errors[0].message, doc.errors[0]);
    const data: unknown = doc.toJS();
    const problems: Violation[] = [];
    /** A problem at `keys[i].field` (or the entry itself), with the line and column of its node in the file. */
    const problem = (path: (string | number)[], message: string) => {
      const node = (doc.getIn(path, true) ?? doc.getIn(path.slice(0, -1), true)) as
        | { range?: [number, number, number] }
        | undefined;
      const at = node?.range === undefined ? undefined : lineCounter.linePos(node.range[0]);
      const name = path
        .map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`))
        .join('')
        .slice(1);
      problems.push({ path: name, line: at?.line ?? 0, column: at?.col ?? 0, message });
    };
    const list = (data as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(list)) problem(['keys'], 'must be a list of { hash, tenant, client, tier, name }');
    for (const [i, raw] of (Array.isArray(list) ? list : []).entries()) {
      const e = (raw ?? {}) as Record<string, unknown>;
      for (const k of Object.keys(e)) if (!ENTRY_KEYS.has(k)) problem(['keys', i, k], 'unknown key');
      const hash = typeof e.hash === 'string' ? e.hash.replace(/^sha256:/, '').toLowerCase() : '';
      if (!/^[0-9a-f]{64}$/.test(hash))
        problem(['keys', i, 'hash'], `must be 64 hex digits (SHA-256), got ${JSON.stringify(e.hash)}`);
      const v: Record<string, string | undefined> = {};
      for (const k of ['tenant', 'client', 'tier', 'name']) {
        const fault = valueFault(e[k], k !== 'name');
        if (fault !== undefined) problem(['keys', i, k], fault);
        else v[k] = typeof e[k] === 'string' ? e[k].trim() : undefined;
      }
      if (this.#byHash.has(hash)) problem(['keys', i, 'hash'], 'listed twice');
      this.#byHash.set(
        hash,
        Object.freeze({ hash, tenant: tenantId(v.tenant), client: v.client, tier: v.tier, name: v.name }),
      );
    }
    if (problems.length > 0) {
      throw new SluiceError(
        ErrorCode.InvalidConfig,
        `invalid API key file ${file}:\n${formatViolations(file, problems)}`,
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

function unreadable(file: string, reason: string, cause: unknown): SluiceError {
  return new SluiceError(
    ErrorCode.InvalidConfig,
    `cannot read API key file ${file}: ${reason}`,
    { file },
    { cause },
  );
}

/**
 * What is wrong with a value of an entry, or `undefined`. Tenant, client and tier become bucket keys, as identity
 * headers do, and are held to the same checks (identity-value.ts): trimmed, not empty, no control or
 * bidirectional character, at most {@link MAX_IDENTITY_LENGTH} UTF-8 bytes. A name is only a label: a non-empty
 * string.
 */
function valueFault(value: unknown, keyed: boolean): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') return 'must be a non-empty string';
  if (!keyed) return undefined;
  const t = value.trim();
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (isControl(c))
      return `must not hold a control or bidirectional character (U+${c.toString(16).toUpperCase().padStart(4, '0')})`;
  }
  const bytes = Buffer.byteLength(t, 'utf8');
  if (bytes > MAX_IDENTITY_LENGTH) return `must be at most ${MAX_IDENTITY_LENGTH} UTF-8 bytes, got ${bytes}`;
  return undefined;
}
