import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { JSONWebKeySet, JWTPayload, JWTVerifyGetKey } from 'jose';
import { ErrorCode, SluiceError } from 'sluice';
import type { JwtConfig } from '../config/gateway-config.js';
import type { Identity } from './identity.js';
import { claimValue, type InvalidClaim } from './identity-value.js';
import { tenantId } from './tenant-id.js';

// jose is loaded when the first verifier is built: a gateway without JWTs, and every `sluice replay`, would
// otherwise spend about a quarter of its start-up (some 50 ms of CPU) loading it. Node.js 22.12 and newer load an
// ES module with require(), synchronously, so the constructor still refuses a bad JWKS at start.
const requireModule = createRequire(import.meta.url);
let joseModule: typeof import('jose') | undefined;
const jose = (): typeof import('jose') => {
  joseModule ??= requireModule('jose') as typeof import('jose');
  return joseModule;
};

/** The outcome of verifying a bearer token. */
export type JwtResult =
  | { readonly ok: true; readonly identity: Identity }
  /**
   * `counts` is false for an expired token: a legitimate client refreshes it, it is no guessing attempt; and for a
   * verified token whose identity claim no id can hold (`invalid`, reason `invalid_identity_claim`).
   */
  | {
      readonly ok: false;
      readonly reason: string;
      readonly counts: boolean;
      readonly invalid?: InvalidClaim;
    };

/**
 * Verifies bearer JWTs with jose against a JWKS file (read once per configuration) or a JWKS URL (fetched,
 * cached and refreshed on unknown key ids by jose), checking signature, issuer, audience, expiry and not-before.
 * The tenant, client, user and tier come from the configured claims.
 */
export class JwtVerifier {
  readonly #keys: JWTVerifyGetKey;
  readonly #config: JwtConfig;

  /**
   * @param config - the `identity.jwt` settings.
   * @throws SluiceError `ERR_INVALID_CONFIG` when the JWKS file cannot be read or is not a JWKS.
   */
  constructor(config: JwtConfig) {
    this.#config = config;
    if (config.jwksFile !== undefined) {
      let jwks: JSONWebKeySet;
      try {
        jwks = JSON.parse(readFileSync(config.jwksFile, 'utf8')) as JSONWebKeySet;
        if (!Array.isArray(jwks.keys)) throw new Error('no "keys" list');
      } catch (cause) {
        throw new SluiceError(
          ErrorCode.InvalidConfig,
          `identity.jwt.jwksFile ${config.jwksFile} is not a JWKS: ${(cause as Error).message}`,
          { option: 'identity.jwt.jwksFile' },
          { cause },
        );
      }
      this.#keys = jose().createLocalJWKSet(jwks);
    } else {
      this.#keys = jose().createRemoteJWKSet(new URL(config.jwksUrl as string), {
        timeoutDuration: 5000,
        cooldownDuration: 30_000,
      });
    }
  }

  /**
   * Verifies a compact JWT.
   *
   * @param token - the token after `Bearer `.
   * @returns the identity, or why it failed and whether the failure counts against the public-auth bucket.
   */
  async verify(token: string): Promise<JwtResult> {
    const c = this.#config;
    let payload: JWTPayload;
    try {
      ({ payload } = await jose().jwtVerify(token, this.#keys, {
        issuer: c.issuer,
        audience: c.audience as string | string[] | undefined,
        algorithms: c.algorithms as string[] | undefined,
        clockTolerance: c.clockToleranceSeconds,
        ...(c.requireExp ? { requiredClaims: ['exp'] } : {}),
      }));
    } catch (e) {
      const joseErrors = jose().errors;
      if (e instanceof joseErrors.JWTExpired) return { ok: false, reason: 'token_expired', counts: false };
      if (e instanceof joseErrors.JWKSTimeout || e instanceof joseErrors.JWKSInvalid) {
        return { ok: false, reason: 'jwks_unavailable', counts: false };
      }
      if (e instanceof joseErrors.JOSEError) return { ok: false, reason: e.code, counts: true };
      // A JWKS URL that cannot be fetched is our outage, not the client's guess: it must not drain its bucket.
      return { ok: false, reason: 'jwks_unavailable', counts: false };
    }
    // Claims become bucket keys: checked as identity header values are, and a value no id can hold refuses the
    // request rather than key it as written or by its address.
    const claims = c.claims;
    const tenant = claimValue(payload, claims.tenant);
    const client = claimValue(payload, claims.client);
    const user = claimValue(payload, claims.user);
    const tier = claimValue(payload, claims.tier);
    for (const v of [tenant, client, user, tier]) {
      if (typeof v === 'object')
        return { ok: false, reason: 'invalid_identity_claim', counts: false, invalid: v };
    }
    return {
      ok: true,
      identity: {
        source: 'jwt',
        tenant: tenantId(tenant as string | undefined),
        client: client as string | undefined,
        user: user as string | undefined,
        tier: tier as string | undefined,
        apiKeyHash: undefined,
      },
    };
  }
}
