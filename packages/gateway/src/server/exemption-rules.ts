import type { TLSSocket } from 'node:tls';
import {
  compileEndpoint,
  type EndpointPattern,
  type IpRange,
  inRanges,
  parseTrustedProxies,
} from 'sluice/http';
import type { GatewayConfig } from '../config/gateway-config.js';

/** Why a request is exempt from limiting; a closed set, used as the metric label `reason`. */
export type ExemptReason = 'disabled' | 'endpoint' | 'mtls' | 'development' | 'tier';

/** Every {@link ExemptReason}, for the metric label allow-list. */
export const EXEMPT_REASONS: readonly ExemptReason[] = Object.freeze([
  'disabled',
  'endpoint',
  'mtls',
  'development',
  'tier',
]);

const LOOPBACK: readonly IpRange[] = parseTrustedProxies('loopback', ['loopback']);

/**
 * The exemptions of one configuration, compiled once: exempt endpoints (`[METHOD ]pattern`), mTLS service
 * clients by certificate subject, and loopback clients in development mode. The unlimited tier is decided
 * later, once the identity is known.
 */
export class ExemptionRules {
  readonly #endpoints: EndpointPattern[];
  readonly #subjects: ReadonlySet<string> | undefined;
  readonly #loopback: boolean;

  /** @param config - the resolved configuration. */
  constructor(config: GatewayConfig) {
    this.#endpoints = config.exemptions.endpoints.map((entry, i) =>
      compileEndpoint(entry, `exemptions.endpoints[${i}]`),
    );
    const s = config.exemptions.mtlsSubjects;
    this.#subjects = s === undefined ? undefined : new Set(s);
    this.#loopback = config.server.mode === 'development' && config.exemptions.loopbackInDevelopment;
  }

  /** True when the method and normalized path match an exempt endpoint (HEAD counts as GET). */
  endpoint(method: string, path: string): boolean {
    for (const e of this.#endpoints) if (e.match(method, path)) return true;
    return false;
  }

  /**
   * True when the connection carries a client certificate that verified against `server.tls.clientCa` and whose
   * subject is allowed: an entry matches the certificate's CN, `CN=<cn>`, or the whole subject as
   * `CN=a,O=b` in the certificate's order.
   */
  mtls(socket: unknown): boolean {
    if (this.#subjects === undefined) return false;
    const tls = socket as TLSSocket;
    if (tls.encrypted !== true || tls.authorized !== true) return false;
    const subject = tls.getPeerCertificate()?.subject as Record<string, string | string[]> | undefined;
    if (subject === undefined) return false;
    const cn = subject.CN;
    const cns = Array.isArray(cn) ? cn : cn === undefined ? [] : [cn];
    for (const c of cns) if (this.#subjects.has(c) || this.#subjects.has(`CN=${c}`)) return true;
    const full = Object.entries(subject)
      .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('+') : v}`)
      .join(',');
    return this.#subjects.has(full);
  }

  /** True in development mode for a loopback client (127.0.0.0/8, ::1, IPv4-mapped loopback). */
  development(clientIp: string | undefined): boolean {
    return this.#loopback && clientIp !== undefined && inRanges(clientIp, LOOPBACK);
  }
}
