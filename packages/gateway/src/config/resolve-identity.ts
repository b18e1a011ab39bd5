import { durationMs } from './duration.js';
import type { ClassConfig, GatewayConfig } from './gateway-config.js';
import type { ConfigPath } from './violation.js';

// biome-ignore lint/suspicious/noExplicitAny: the raw section was validated against the JSON Schema.
type Raw = Record<string, any>;

/**
 * The `identity` section with its defaults: JWT verification, the API key file, identity headers (names lower
 * case) and the class failed credentials count against.
 *
 * @param identity - the raw section (validated against the schema).
 * @param fileAt - resolves a file next to the configuration, reporting a missing one.
 * @param publicAuth - the resolved public-auth class.
 */
export function resolveIdentity(
  identity: Raw,
  fileAt: (value: string | undefined, path: ConfigPath) => string | undefined,
  publicAuth: ClassConfig,
): GatewayConfig['identity'] {
  const jwt = identity.jwt as Raw | undefined;
  const claims = (jwt?.claims ?? {}) as Raw;
  const idHeaders = identity.headers as Raw | undefined;
  return {
    jwt:
      jwt === undefined
        ? undefined
        : {
            jwksFile: fileAt(jwt.jwksFile, ['identity', 'jwt', 'jwksFile']),
            jwksUrl: jwt.jwksUrl,
            issuer: jwt.issuer,
            audience: jwt.audience,
            algorithms: jwt.algorithms,
            clockToleranceSeconds: Math.round((durationMs(jwt.clockTolerance) ?? 0) / 1000),
            // A token that never expires stays valid for ever once leaked: refused unless the operator opts out.
            requireExp: jwt.requireExp !== false,
            claims: {
              tenant: claims.tenant ?? 'tenant_id',
              client: claims.client ?? 'client_id',
              user: claims.user ?? 'sub',
              tier: claims.tier ?? 'tier',
            },
          },
    apiKeys:
      identity.apiKeys === undefined
        ? undefined
        : {
            file: fileAt(identity.apiKeys.file, ['identity', 'apiKeys', 'file']) as string,
            header: (identity.apiKeys.header ?? 'x-api-key').toLowerCase(),
          },
    headers:
      idHeaders === undefined
        ? undefined
        : {
            tenant: (idHeaders.tenant ?? 'x-tenant-id').toLowerCase(),
            client: (idHeaders.client ?? 'x-client-id').toLowerCase(),
            user: (idHeaders.user ?? 'x-user-id').toLowerCase(),
            tier: (idHeaders.tier ?? 'x-rate-limit-tier').toLowerCase(),
          },
    publicAuth,
  };
}
