import type { TLSSocket } from 'node:tls';

/**
 * The exempt mTLS service clients of one configuration, by certificate subject: an entry matches the
 * certificate's CN, `CN=<cn>`, or the whole subject as `CN=a,O=b` in the certificate's order. Only a
 * certificate that verified against `server.tls.clientCa` counts.
 */
export class MtlsSubjects {
  readonly #subjects: ReadonlySet<string> | undefined;

  /** @param subjects - `exemptions.mtlsSubjects`, or `undefined` when none are exempt. */
  constructor(subjects: readonly string[] | undefined) {
    this.#subjects = subjects === undefined || subjects.length === 0 ? undefined : new Set(subjects);
  }

  /** True when no subject is exempt, so no request needs the check. */
  get empty(): boolean {
    return this.#subjects === undefined;
  }

  /** True when the connection carries a verified client certificate whose subject is exempt. */
  matches(socket: unknown): boolean {
    if (this.#subjects === undefined || socket === undefined) return false;
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
}
