import type { TLSSocket } from 'node:tls';
import { canonicalType, mtlsSubjectIssue, parseAllowedSubject } from '../config/distinguished-name.js';

/** One allowed subject, parsed once: the CN it names alone, or every attribute of the whole subject. */
interface AllowedSubject {
  /** Set when the entry names only a CN (`billing`, `CN=billing`): any certificate with that one CN matches. */
  readonly cn: string | undefined;
  /** Otherwise the whole subject: each attribute type with its values, sorted (compared as a multiset). */
  readonly attributes: ReadonlyMap<string, readonly string[]>;
}

/**
 * The exempt mTLS service clients of one configuration, by certificate subject. Each entry is a distinguished name
 * in RFC 4514 text (`CN=billing,O=internal`, `CN=a\,b`), or a bare CN (`billing`, read as `CN=billing`), parsed
 * when the configuration is loaded. An entry that names only a CN matches a certificate whose subject has exactly
 * that one CN, whatever its other attributes; any other entry matches a certificate whose subject has exactly its
 * attributes, each type with the same values, in any order. Values are compared as they are, attribute by
 * attribute, never as joined text: a CN of `billing,O=internal` is one CN, not an organisation. Only a
 * certificate that verified against `server.tls.clientCa` counts.
 */
export class MtlsSubjects {
  readonly #subjects: readonly AllowedSubject[] | undefined;

  /**
   * @param subjects - `exemptions.mtlsSubjects`, or `undefined` when none are exempt.
   * @throws Error when an entry is not a distinguished name (the configuration's checks refuse it first, at its
   *   path: see {@link mtlsSubjectIssue}).
   */
  constructor(subjects: readonly string[] | undefined) {
    this.#subjects =
      subjects === undefined || subjects.length === 0
        ? undefined
        : Object.freeze(subjects.map(allowedSubject));
  }

  /** True when no subject is exempt, so no request needs the check. */
  get empty(): boolean {
    return this.#subjects === undefined;
  }

  /** True when the connection carries a verified client certificate whose subject is exempt. */
  matches(socket: unknown): boolean {
    const allowed = this.#subjects;
    if (allowed === undefined || socket === undefined) return false;
    const tls = socket as TLSSocket;
    if (tls.encrypted !== true || tls.authorized !== true) return false;
    const raw = tls.getPeerCertificate()?.subject as Record<string, unknown> | undefined;
    if (raw === undefined || raw === null || typeof raw !== 'object') return false;
    const subject = subjectAttributes(raw);
    if (subject === undefined) return false;
    for (const entry of allowed) if (matchesEntry(entry, subject)) return true;
    return false;
  }
}

function allowedSubject(entry: string): AllowedSubject {
  const parsed = parseAllowedSubject(entry);
  if (!parsed.ok) throw new Error(mtlsSubjectIssue(entry));
  const a = parsed.attributes;
  if (a.length === 1 && a[0].type === 'CN') return { cn: a[0].value, attributes: new Map() };
  const attributes = new Map<string, string[]>();
  for (const { type, value } of a) {
    const values = attributes.get(type);
    if (values === undefined) attributes.set(type, [value]);
    else values.push(value);
  }
  for (const values of attributes.values()) values.sort();
  return { cn: undefined, attributes };
}

/**
 * A certificate subject as Node.js gives it (`{ CN: 'billing', OU: ['a', 'b'] }`: a repeated type is an array)
 * under canonical types, each with its values sorted; `undefined` for a value that is not text.
 */
function subjectAttributes(raw: Record<string, unknown>): Map<string, string[]> | undefined {
  const out = new Map<string, string[]>();
  for (const key of Object.keys(raw)) {
    const v = raw[key];
    const values = Array.isArray(v) ? [...v] : [v];
    for (const x of values) if (typeof x !== 'string') return undefined;
    const type = canonicalType(key);
    const known = out.get(type);
    out.set(type, known === undefined ? (values as string[]) : [...known, ...(values as string[])]);
  }
  for (const values of out.values()) values.sort();
  return out;
}

function matchesEntry(entry: AllowedSubject, subject: ReadonlyMap<string, readonly string[]>): boolean {
  if (entry.cn !== undefined) {
    const cn = subject.get('CN');
    return cn !== undefined && cn.length === 1 && cn[0] === entry.cn;
  }
  if (entry.attributes.size !== subject.size) return false;
  for (const [type, values] of entry.attributes) {
    const got = subject.get(type);
    if (got === undefined || got.length !== values.length) return false;
    for (let i = 0; i < values.length; i++) if (got[i] !== values[i]) return false;
  }
  return true;
}
