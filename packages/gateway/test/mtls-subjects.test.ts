import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MtlsSubjects } from '../src/admission/mtls-subjects.js';
import { loadConfigText } from '../src/config/load-config.js';
import { tempDir } from './support.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** A verified TLS socket whose peer certificate has `subject`, as Node.js gives it. */
function socket(subject: Record<string, string | string[]>, authorized = true): unknown {
  return { encrypted: true, authorized, getPeerCertificate: () => ({ subject }) };
}

describe('mTLS allowed subjects', () => {
  const allowed = new MtlsSubjects(['CN=billing,O=internal']);

  it('match the whole subject attribute by attribute, in any order', () => {
    expect(allowed.matches(socket({ CN: 'billing', O: 'internal' }))).toBe(true);
    expect(allowed.matches(socket({ O: 'internal', CN: 'billing' }))).toBe(true);
    expect(allowed.matches(socket({ CN: 'billing', O: 'external' }))).toBe(false);
    expect(allowed.matches(socket({ CN: 'billing', O: 'internal', OU: 'x' }))).toBe(false);
    expect(allowed.matches(socket({ CN: 'billing' }))).toBe(false);
    expect(allowed.matches(socket({ CN: 'billing', O: 'internal' }, false))).toBe(false);
  });

  it('never read a CN holding separators as the attributes it spells', () => {
    for (const cn of ['billing,O=internal', 'CN=billing,O=internal', 'billing, O=internal'])
      expect(allowed.matches(socket({ CN: cn })), cn).toBe(false);
    // Nor a list of values joined into the text of one entry.
    expect(new MtlsSubjects(['CN=a+CN=b']).matches(socket({ CN: 'a+CN=b' }))).toBe(false);
    expect(new MtlsSubjects(['CN=a+CN=b']).matches(socket({ CN: ['a', 'b'] }))).toBe(true);
  });

  it('read escapes, multi-valued RDNs and long attribute names', () => {
    const escaped = new MtlsSubjects(['CN=billing\\,O\\=internal,O=acme']);
    expect(escaped.matches(socket({ CN: 'billing,O=internal', O: 'acme' }))).toBe(true);
    expect(escaped.matches(socket({ CN: 'billing', O: 'internal' }))).toBe(false);
    expect(new MtlsSubjects(['CN=caf\\C3\\A9,O=x']).matches(socket({ CN: 'café', O: 'x' }))).toBe(true);
    expect(
      new MtlsSubjects(['CN=a+UID=7, OU=x, OU=y']).matches(socket({ CN: 'a', UID: '7', OU: ['y', 'x'] })),
    ).toBe(true);
    expect(
      new MtlsSubjects(['commonName=svc,organizationName=in']).matches(socket({ CN: 'svc', O: 'in' })),
    ).toBe(true);
    expect(new MtlsSubjects(['CN=\\ lead,O=x']).matches(socket({ CN: ' lead', O: 'x' }))).toBe(true);
  });

  it('keep a CN alone (billing, CN=billing) matching the one CN of a subject, whatever else it has', () => {
    for (const entry of ['billing', 'CN=billing']) {
      const s = new MtlsSubjects([entry]);
      expect(s.matches(socket({ CN: 'billing', O: 'internal' })), entry).toBe(true);
      expect(s.matches(socket({ CN: 'billing,O=internal' })), entry).toBe(false);
      expect(s.matches(socket({ CN: ['billing', 'other'] })), entry).toBe(false);
      expect(s.matches(socket({ O: 'billing' })), entry).toBe(false);
    }
  });
});

describe('mTLS allowed subjects in the configuration', () => {
  it('refuse an entry that is not a distinguished name, at its path', () => {
    const bad = [
      'billing,O=internal',
      'CN=a,b',
      'CN=a\\q',
      'CN=#0403616263',
      'CN="x"',
      'CN=',
      'C N=x',
      'CN=a;b',
    ];
    const yaml = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
server:
  tls: { cert: s.pem, key: s.key, clientCa: ca.pem }
exemptions:
  mtls:
    allowedSubjects: ${JSON.stringify(['CN=ok,O=x', 'ok', ...bad])}
`;
    const r = loadConfigText(yaml, join(tmp.dir, 'c.yaml'), { env: {} });
    expect(r.ok).toBe(false);
    const paths = r.ok ? [] : r.violations.map((v) => v.path).filter((p) => p.startsWith('exemptions'));
    expect(paths).toEqual(bad.map((_, i) => `exemptions.mtls.allowedSubjects[${i + 2}]`));
    const first = r.ok
      ? undefined
      : r.violations.find((v) => v.path === 'exemptions.mtls.allowedSubjects[2]');
    expect(first?.message).toContain('RFC 4514');
  });
});
