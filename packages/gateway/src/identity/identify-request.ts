import type { IncomingHttpHeaders } from 'node:http';
import type { GatewayConfig } from '../config/gateway-config.js';
import { cgiSpelling, compareSpelling, NOT_SPELLING } from '../config/header-spelling.js';
import { type ApiKeyEntry, ApiKeyFile } from './api-key-file.js';
import { ANONYMOUS, type Identity } from './identity.js';
import { type InvalidClaim, isControl, MAX_IDENTITY_LENGTH } from './identity-value.js';
import { JwtVerifier } from './jwt-verifier.js';
import { tenantId } from './tenant-id.js';

/** The credentials a request presents, found without verifying anything. */
export interface PresentedCredentials {
  readonly bearer: string | undefined;
  readonly apiKey: string | undefined;
}

/** The outcome of identifying a request. */
export type IdentifyResult =
  | { readonly ok: true; readonly identity: Identity }
  | {
      readonly ok: false;
      readonly source: 'jwt' | 'apikey';
      readonly reason: string;
      readonly counts: boolean;
      /** A verified token's identity claim that no id can hold: answered as an invalid identity header is. */
      readonly invalid?: InvalidClaim;
    };

export { MAX_IDENTITY_LENGTH } from './identity-value.js';

/** An identity header value no id can hold, as {@link RequestIdentifier.invalidHeader} finds it. */
export interface InvalidIdentityValue {
  /** The header, as configured. */
  readonly name: string;
  /** `control`: it holds a control character; `too_long`: it is longer than {@link MAX_IDENTITY_LENGTH}. */
  readonly fault: 'control' | 'too_long';
}

/** The answer for a request without credentials or identity headers: one frozen object, none per request. */
const ANONYMOUS_RESULT: IdentifyResult = Object.freeze({ ok: true, identity: ANONYMOUS });

/**
 * Identifies requests from the configured sources, in order: a bearer JWT, an API key, identity headers (only
 * when the peer is a trusted proxy), else anonymous. Built once per configuration.
 */
export class RequestIdentifier {
  readonly #jwt: JwtVerifier | undefined;
  readonly #apiKeys: ApiKeyFile | undefined;
  readonly #apiKeyHeader: string | undefined;
  readonly #headers: GatewayConfig['identity']['headers'];
  readonly #names: readonly string[];
  readonly #spellings: readonly string[];
  /** The answers of {@link RequestIdentifier.invalidHeader}, made once per header so a refusal allocates none. */
  readonly #faults: readonly {
    readonly control: InvalidIdentityValue;
    readonly tooLong: InvalidIdentityValue;
  }[];

  /**
   * @param config - the resolved configuration.
   * @throws SluiceError `ERR_INVALID_CONFIG` when the JWKS or API key file is unusable.
   */
  constructor(config: GatewayConfig) {
    const id = config.identity;
    this.#jwt = id.jwt === undefined ? undefined : new JwtVerifier(id.jwt);
    this.#apiKeys = id.apiKeys === undefined ? undefined : new ApiKeyFile(id.apiKeys.file);
    this.#apiKeyHeader = id.apiKeys?.header;
    this.#headers = id.headers;
    const h = id.headers;
    const names = h === undefined ? [] : [h.tenant, h.client, h.user, h.tier];
    this.#names = Object.freeze(names);
    this.#spellings = Object.freeze(names.map(cgiSpelling));
    this.#faults = Object.freeze(
      names.map((name) =>
        Object.freeze({
          control: Object.freeze({ name, fault: 'control' as const }),
          tooLong: Object.freeze({ name, fault: 'too_long' as const }),
        }),
      ),
    );
  }

  /**
   * The API key file's entry named `name`, for override patterns (`apikey-name:<name>`).
   *
   * @returns the entry, `undefined` when none has the name, `null` when no API key file is configured.
   */
  apiKeyNamed(name: string): ApiKeyEntry | undefined | null {
    return this.#apiKeys === undefined ? null : this.#apiKeys.named(name);
  }

  /**
   * Whether a request header of an untrusted peer is an identity header, in any spelling (`x-tenant-id`,
   * `x_tenant_id`, `X-Tenant_Id`, `x.tenant.id`): none of them reaches the upstream, since the gateway did not
   * believe it.
   * A bound function, handed to the forwarding code as it is.
   *
   * @param name - a header name, lower case (as Node.js gives them).
   */
  readonly stripsFromUntrusted = (name: string): boolean => {
    const spellings = this.#spellings;
    for (let i = 0; i < spellings.length; i++)
      if (compareSpelling(name, spellings[i]) !== NOT_SPELLING) return true;
    return false;
  };

  /**
   * Whether a request header of a trusted proxy is another spelling of an identity header (any character but a
   * letter or a digit in place of `-`, but the configured spelling): stripped, since the gateway never reads it
   * and CGI-style servers (PHP, WSGI, Rack) read them all as `HTTP_X_TENANT_ID`, so a client could pose as a
   * tenant behind a proxy that passes them on.
   * A bound function, as {@link RequestIdentifier.stripsFromUntrusted}.
   *
   * @param name - a header name, lower case.
   */
  readonly stripsFromTrusted = (name: string): boolean =>
    this.stripsFromUntrusted(name) && !this.#names.includes(name);

  /**
   * The first identity header that holds more than one value: sent twice (Node.js joins the values with `, `), or
   * as a list a proxy folded (RFC 9110 5.3). A comma is in no id the gateway keys, so a comma means a list.
   * Four lookups and no allocation: it runs for every request of a trusted proxy.
   *
   * @param headers - the request headers.
   * @returns the header's configured name, or `undefined` when each is absent or holds one value.
   */
  repeatedHeader(headers: IncomingHttpHeaders): string | undefined {
    const names = this.#names;
    for (let i = 0; i < names.length; i++) {
      const v = headers[names[i]];
      if (v !== undefined && (typeof v !== 'string' || v.indexOf(',') >= 0)) return names[i];
    }
    return undefined;
  }

  /**
   * The first identity header whose value no id can hold: a control character (C0 such as a tab inside the
   * value, DEL, C1 as an obs-text byte Node.js accepts or in UTF-8, a bidirectional control), or more than
   * {@link MAX_IDENTITY_LENGTH} characters. {@link RequestIdentifier.identify} would not read such a value, and
   * the request would be keyed by its address, out of its tenant's blocks; admission refuses it instead.
   * A value of visible ASCII (the common case) costs a length check and one regular expression test.
   *
   * @param headers - the request headers (a repeated header is {@link RequestIdentifier.repeatedHeader}'s).
   * @returns the header and what is wrong with it (one frozen object per header and fault), or `undefined`
   *   when every value can be read.
   */
  invalidHeader(headers: IncomingHttpHeaders): InvalidIdentityValue | undefined {
    const names = this.#names;
    for (let i = 0; i < names.length; i++) {
      const v = headers[names[i]];
      if (typeof v !== 'string') continue;
      // Trimmed as it is read: spaces and tabs around a value are the field's, not the id's.
      const t = v.trim();
      if (t.length > MAX_IDENTITY_LENGTH) return this.#faults[i].tooLong;
      if (t !== '' && !VISIBLE_ASCII.test(t) && spokenValue(t) === undefined) return this.#faults[i].control;
    }
    return undefined;
  }

  /** The credentials this gateway would verify, or `undefined` when there are none. */
  credentials(headers: IncomingHttpHeaders): PresentedCredentials | undefined {
    let bearer: string | undefined;
    if (this.#jwt !== undefined) {
      const auth = headers.authorization;
      if (auth !== undefined && auth.length > 7 && auth.slice(0, 7).toLowerCase() === 'bearer ')
        bearer = auth.slice(7).trim();
    }
    let apiKey: string | undefined;
    if (this.#apiKeyHeader !== undefined) {
      const v = headers[this.#apiKeyHeader];
      apiKey = Array.isArray(v) ? v[0] : v;
      if (apiKey === '') apiKey = undefined;
    }
    return bearer === undefined && apiKey === undefined ? undefined : { bearer, apiKey };
  }

  /**
   * Verifies presented credentials, or reads identity headers from a trusted peer.
   *
   * @param headers - the request headers.
   * @param presented - from {@link RequestIdentifier.credentials}.
   * @param trustedPeer - true when the direct peer is in `server.trustedProxies`.
   * @returns the identity (or why the credentials failed): a promise only for a bearer token, a value otherwise.
   */
  identify(
    headers: IncomingHttpHeaders,
    presented: PresentedCredentials | undefined,
    trustedPeer: boolean,
  ): IdentifyResult | Promise<IdentifyResult> {
    // Only a JWT needs a promise (JWKS fetch, async crypto); everything else answers in the same tick, so the
    // gateway's hot path (no credentials, API keys, identity headers) does not pay a microtask per request.
    if (presented?.bearer !== undefined && this.#jwt !== undefined) {
      return this.#jwt.verify(presented.bearer).then(
        (r): IdentifyResult =>
          r.ok
            ? r
            : {
                ok: false,
                source: 'jwt',
                reason: r.reason,
                counts: r.counts,
                ...(r.invalid === undefined ? {} : { invalid: r.invalid }),
              },
      );
    }
    if (presented?.apiKey !== undefined && this.#apiKeys !== undefined) {
      const identity = this.#apiKeys.identify(presented.apiKey);
      return identity === undefined
        ? { ok: false, source: 'apikey', reason: 'unknown_api_key', counts: true }
        : { ok: true, identity };
    }
    const h = this.#headers;
    if (h !== undefined && trustedPeer) {
      const tenant = tenantId(single(headers[h.tenant]));
      const client = single(headers[h.client]);
      const user = single(headers[h.user]);
      const tier = single(headers[h.tier]);
      if (tenant !== undefined || client !== undefined || user !== undefined || tier !== undefined) {
        return {
          ok: true,
          identity: { source: 'headers', tenant, client, user, tier, apiKeyHash: undefined },
        };
      }
    }
    return ANONYMOUS_RESULT;
  }
}

/** A value of visible ASCII only: the common case, read as it is (no allocation). */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

function single(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  if (s === undefined) return undefined;
  const t = s.trim();
  // Identity values become bucket keys: keep them short so a header cannot bloat the table. Admission refuses a
  // longer value of a trusted proxy first (RequestIdentifier.invalidHeader); this is for callers that do not.
  if (t === '' || t.length > MAX_IDENTITY_LENGTH) return undefined;
  return VISIBLE_ASCII.test(t) ? t : spokenValue(t);
}

/**
 * A value with a space or a non-ASCII character (`web app`, `Müller`): ids people and identity providers write.
 * It is read, not dropped, because a dropped value keys the request by the proxy's address, a bucket (and a
 * penalty block) shared by every caller behind that proxy, and an operator's escaped rule
 * (`tenant:m%C3%BCller`) would never hold. Node.js gives header bytes one character each (latin1): bytes that
 * are UTF-8 are read as UTF-8, as a proxy sends them; others keep the latin1 reading. A control character is
 * never part of an id: such a value is not read.
 */
function spokenValue(t: string): string | undefined {
  let text = t;
  for (let i = 0; i < t.length; i++) {
    if (t.charCodeAt(i) > 0x7f) {
      try {
        text = UTF8.decode(Buffer.from(t, 'latin1'));
      } catch {
        // Not UTF-8: the latin1 reading stands.
      }
      break;
    }
  }
  for (let i = 0; i < text.length; i++) if (isControl(text.charCodeAt(i))) return undefined;
  return text;
}
