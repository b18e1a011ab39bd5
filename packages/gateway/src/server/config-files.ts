import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { Violation } from '../config/violation.js';
import { ApiKeyFile } from '../identity/api-key-file.js';
import { JwtVerifier } from '../identity/jwt-verifier.js';

/**
 * Loads every file a configuration names, as a start loads them, and reports each one that a start would refuse
 * with its configuration path: the API key file and the JWKS file through the classes the gateway reads them
 * with, the TLS certificate, key and client CA into a TLS context as the HTTPS listener takes them. `sluice
 * validate` and `sluice serve` both run it (a reload reads the identity files through the same classes), so
 * every file `serve` would refuse is reported by `validate`. A TLS file is tried alone first, so that a file
 * without PEM is named instead of reported as a bare OpenSSL code.
 *
 * @param config - a valid configuration (from `loadConfigFile`).
 * @returns the violations, without positions (paths into the resolved configuration); empty when every file
 *   loads.
 */
export function configFileViolations(config: GatewayConfig): Violation[] {
  const out: Violation[] = [];
  const report = (path: string, message: string) => out.push({ path, line: 0, column: 0, message });
  const { apiKeys, jwt } = config.identity;
  if (apiKeys !== undefined) {
    try {
      new ApiKeyFile(apiKeys.file);
    } catch (e) {
      report('identity.apiKeys.file', (e as Error).message);
    }
  }
  if (jwt?.jwksFile !== undefined) {
    try {
      new JwtVerifier(jwt);
    } catch (e) {
      // The verifier's message starts with the path, which the violation already shows.
      report('identity.jwt.jwksFile', (e as Error).message.replace(/^identity\.jwt\.jwksFile /, ''));
    }
  }
  const tls = config.server.tls;
  if (tls !== undefined) tlsViolations(tls, report);
  return out;
}

type TlsFiles = NonNullable<GatewayConfig['server']['tls']>;

function tlsViolations(tls: TlsFiles, report: (path: string, message: string) => void): void {
  const parts = [
    { path: 'server.tls.cert', file: tls.cert, what: 'a PEM certificate', option: 'cert' },
    { path: 'server.tls.key', file: tls.key, what: 'a PEM private key', option: 'key' },
    { path: 'server.tls.clientCa', file: tls.clientCa, what: 'PEM CA certificates', option: 'ca' },
  ] as const;
  const read: Record<string, Buffer> = {};
  let fine = true;
  for (const p of parts) {
    if (p.file === undefined) continue;
    try {
      const bytes = readFileSync(p.file);
      createSecureContext({ [p.option]: bytes });
      read[p.option] = bytes;
    } catch (e) {
      fine = false;
      const code = (e as NodeJS.ErrnoException).code;
      const reading = code !== undefined && !code.startsWith('ERR_OSSL');
      report(
        p.path,
        reading
          ? `cannot read ${p.file}: ${(e as Error).message}`
          : `${p.file} does not hold ${p.what} (${(e as Error).message})`,
      );
    }
  }
  if (!fine) return;
  try {
    createSecureContext({ cert: read.cert, key: read.key });
  } catch (e) {
    report(
      'server.tls.key',
      `${tls.key} is not the key of the certificate ${tls.cert} (${(e as Error).message})`,
    );
  }
}
