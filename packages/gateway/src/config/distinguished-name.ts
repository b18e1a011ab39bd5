/**
 * One attribute of a distinguished name: its type as certificate subjects name it (`CN`, `O`, `OU`, a dotted
 * OID...), upper case, and its value unescaped.
 */
export interface DnAttribute {
  readonly type: string;
  readonly value: string;
}

/** A distinguished name parsed from RFC 4514 text, or why it is not one. */
export type ParsedDn =
  | { readonly ok: true; readonly attributes: readonly DnAttribute[] }
  | { readonly ok: false; readonly message: string };

/**
 * Long attribute names (RFC 4519) under the short names Node.js uses as keys of a certificate's subject, all upper
 * case so that a type is compared without regard to case, as RFC 4512 compares descriptors.
 */
const ALIASES: Readonly<Record<string, string>> = Object.freeze({
  COMMONNAME: 'CN',
  ORGANIZATIONNAME: 'O',
  ORGANIZATIONALUNITNAME: 'OU',
  COUNTRYNAME: 'C',
  LOCALITYNAME: 'L',
  STATEORPROVINCENAME: 'ST',
  STREETADDRESS: 'STREET',
  DOMAINCOMPONENT: 'DC',
  USERID: 'UID',
  E: 'EMAILADDRESS',
  '2.5.4.3': 'CN',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
});

/** An attribute type: a descriptor (`CN`, `organizationName`) or a numeric OID (`2.5.4.3`). */
const TYPE = /^(?:[A-Za-z][A-Za-z0-9-]*|\d+(?:\.\d+)+)$/;
/** Characters RFC 4514 requires escaped anywhere in a value. */
const MUST_ESCAPE = '"+,;<>\\\0';
const HEX = /^[0-9A-Fa-f]{2}$/;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * An attribute type in the one spelling both sides are compared in: upper case, long names and the common OIDs
 * under their short names (`organizationName` and `2.5.4.10` are `O`).
 *
 * @param type - an attribute type from a configured name or a key of a certificate's subject.
 */
export function canonicalType(type: string): string {
  const upper = type.toUpperCase();
  return ALIASES[upper] ?? upper;
}

/**
 * Parses a distinguished name written as RFC 4514 text: `CN=billing,O=internal`, a value's special characters
 * escaped (`CN=a\,b`, `CN=\23tag`, `CN=caf\C3\A9`), `+` joining the attributes of a multi-valued RDN
 * (`CN=a+UID=7`). Spaces around `,`, `+` and `=` are allowed and dropped, as in the text OpenSSL prints; a space
 * that belongs to a value is escaped. A hex-encoded value (`CN=#0403...`), a quoted one, an empty one and an
 * empty name are refused: they are not compared reliably against the text of a certificate's subject.
 *
 * @param text - the name.
 * @returns its attributes in the order written (RDN boundaries are not kept: Node.js flattens a subject too).
 */
export function parseDistinguishedName(text: string): ParsedDn {
  const attributes: DnAttribute[] = [];
  let i = 0;
  const n = text.length;
  const skipSpaces = () => {
    while (i < n && text[i] === ' ') i++;
  };
  for (;;) {
    skipSpaces();
    const eq = text.indexOf('=', i);
    if (eq < 0) return fail(`expected type=value at character ${i + 1}`);
    const type = text.slice(i, eq).trim();
    if (!TYPE.test(type)) return fail(`${JSON.stringify(type)} is not an attribute type (such as CN or O)`);
    i = eq + 1;
    skipSpaces();
    if (text[i] === '#') return fail(`the value of ${type} is hex-encoded; write it as text`);
    if (text[i] === '"') return fail(`the value of ${type} is quoted; escape its special characters instead`);
    const value = readValue();
    if (typeof value !== 'string') return fail(`in the value of ${type}: ${value.error}`);
    if (value === '') return fail(`the value of ${type} is empty`);
    attributes.push({ type: canonicalType(type), value });
    if (i >= n) break;
    // readValue stops only at the end or at an unescaped separator.
    i++;
  }
  return { ok: true, attributes: Object.freeze(attributes) };

  /** Reads a value up to an unescaped `,` or `+` (or the end); trailing unescaped spaces are not part of it. */
  function readValue(): string | { error: string } {
    const bytes: number[] = [];
    let kept = 0;
    while (i < n) {
      const c = text[i];
      if (c === ',' || c === '+') break;
      if (c === '\\') {
        const next = text[i + 1];
        if (next === undefined) return { error: 'it ends with a lone backslash' };
        const pair = text.slice(i + 1, i + 3);
        if (HEX.test(pair)) {
          bytes.push(Number.parseInt(pair, 16));
          i += 3;
        } else if (`${MUST_ESCAPE} #=`.includes(next)) {
          pushText(bytes, next);
          i += 2;
        } else return { error: `\\${next} is not an escape (write \\\\ for a backslash)` };
        kept = bytes.length;
        continue;
      }
      if (c !== ' ' && MUST_ESCAPE.includes(c)) return { error: `${c} must be escaped as \\${c}` };
      // A whole code point, so a character beyond the BMP is encoded as one, not as two halves.
      const char = String.fromCodePoint(text.codePointAt(i) as number);
      pushText(bytes, char);
      i += char.length;
      if (c !== ' ') kept = bytes.length;
    }
    try {
      return UTF8.decode(Uint8Array.from(bytes.slice(0, kept)));
    } catch {
      return { error: 'its escaped bytes are not UTF-8' };
    }
  }
}

const ENCODER = new TextEncoder();

/**
 * An `exemptions.mtls.allowedSubjects` entry parsed: RFC 4514 text, or a bare CN (no `=` at all), read as
 * `CN=<it>` so that its special characters still need escaping (`billing,O=internal` is refused, not one CN).
 *
 * @param entry - the configured text.
 */
export function parseAllowedSubject(entry: string): ParsedDn {
  return parseDistinguishedName(entry.includes('=') ? entry : `CN=${entry}`);
}

/**
 * Why an `exemptions.mtls.allowedSubjects` entry is refused, or `undefined` when it can be compared.
 *
 * @param entry - the configured text.
 */
export function mtlsSubjectIssue(entry: string): string | undefined {
  const parsed = parseAllowedSubject(entry);
  return parsed.ok
    ? undefined
    : `${JSON.stringify(entry)} is not a distinguished name in RFC 4514 text (such as CN=billing,O=internal, with special characters escaped as in CN=a\\,b): ${parsed.message}`;
}

function pushText(bytes: number[], c: string): void {
  for (const b of ENCODER.encode(c)) bytes.push(b);
}

function fail(message: string): ParsedDn {
  return { ok: false, message };
}
