import { invalidOption, type SluiceError } from '../core/index.js';
import { patternAsKey } from '../core/key-pattern.js';

/**
 * The kinds bucket keys start with (see `keys.ts`): `device` keys fall back to `token`, a key function's result is
 * kept under `custom`, a route parameter's under `param:<name>`. Users and clients have no kind of their own: they
 * are keyed under their tenant.
 */
export const KEY_PATTERN_KINDS: readonly string[] = Object.freeze([
  'ip',
  'tenant',
  'principal',
  'apikey',
  'device',
  'token',
  'connection',
  'agent',
  'human',
  'host',
  'webhook',
  'param',
  'custom',
]);

const KINDS_TEXT = KEY_PATTERN_KINDS.join(', ');
const TENANT_ROLES: readonly string[] = ['client', 'user'];
const TENANT_SHAPE =
  'tenant:<t>, tenant:<t>:client:<c> or tenant:<t>:user:<u>, or a prefix of one before *, with ":" and "%" inside a name written %3A and %25 as keys write them';
/** An API key's part: the first 22 characters of its SHA-256 as base64url (`sha256Base64Url`). */
const API_KEY_HASH = /^[A-Za-z0-9_-]{22}$/;
const API_KEY_HASH_START = /^[A-Za-z0-9_-]{0,22}$/;
/** The start of an `ip:` key's value: an address or /64 as keys write them (lower case), or `unknown`. */
const IP_KEY_START = /^[0-9a-f.:/]*$/;

/**
 * Refuses a pattern that no bucket key can match: an unknown kind (with the close kind when the given one looks
 * like a typo), an empty part, a tenant pattern of another shape than the keys', a `%` that starts no escape, or a
 * value no key of its kind holds. Names holding `:` or `%` are escaped in keys (`escapeKeyPart`), so such a
 * pattern is refused with its escaped form: writing it silently would guess, since `tenant:a:b` may be the tenant
 * `a:b` or a tenant key cut short. `ip:` values are checked by the caller, except the start of a prefix.
 *
 * @param pattern - a pattern that passed `checkOverridePattern` (printable, `*` only at the end, never `*` alone).
 * @throws SluiceError `ERR_INVALID_OPTION` naming `pattern`.
 */
export function checkPatternShape(pattern: string): void {
  const star = pattern.endsWith('*');
  const body = star ? pattern.slice(0, -1) : pattern;
  const colon = body.indexOf(':');
  const kind = colon < 0 ? body : body.slice(0, colon);
  // `kind !== ''`: a stored `*` (refused when set) must not become a prefix of every key.
  if (colon < 0 && star && kind !== '' && KEY_PATTERN_KINDS.some((k) => k.startsWith(kind))) return;
  if (colon < 0 || !KEY_PATTERN_KINDS.includes(kind)) {
    throw unknownKind(pattern, kind, colon < 0 ? undefined : body.slice(colon), star);
  }
  const values = body.slice(colon + 1).split(':');
  const issue =
    kind === 'ip'
      ? ipIssue(values.join(':'), star)
      : kind === 'tenant'
        ? tenantIssue(values, star)
        : kind === 'apikey'
          ? apiKeyIssue(values, star)
          : kind === 'param'
            ? paramIssue(values, star)
            : singleIssue(kind, values, star);
  if (issue !== undefined) {
    // A pattern ending in ":" is most likely a prefix without its "*".
    const prefix = !star && body.endsWith(':') ? `; ${pattern}* for every key starting so` : '';
    throw invalidOption('pattern', `${issue}${prefix}`, pattern);
  }
  if (kind === 'ip' || kind === 'apikey') return;
  // Escapes of a key's spaces, controls, non-ASCII characters and `*` stand for whole characters.
  if (patternAsKey(body) === undefined) {
    throw invalidOption(
      'pattern',
      'written with each %XX escape of a space, a control or a non-ASCII character part of a whole UTF-8 character, as keyAsPattern writes a key',
      pattern,
    );
  }
  const unescaped = values.some((v, i) => strayPercent(star && i === values.length - 1 ? partial(v) : v));
  if (unescaped) {
    const written = `${kind}:${values.map(escapePercent).join(':')}${star ? '*' : ''}`;
    throw invalidOption(
      'pattern',
      `written with "%" inside a name as %25, as keys write it: ${written}`,
      pattern,
    );
  }
}

function unknownKind(pattern: string, kind: string, rest: string | undefined, star: boolean): SluiceError {
  if (rest === undefined && star) {
    const hint = typo(kind, KEY_PATTERN_KINDS, (k) => `${k}*`);
    return invalidOption(
      'pattern',
      `a prefix of a bucket key before *, starting like a kind (${KINDS_TEXT})${hint}`,
      pattern,
    );
  }
  const expected = `a bucket key starting with its kind (${KINDS_TEXT}), such as tenant:acme or ip:203.0.113.9`;
  if (rest === undefined) return invalidOption('pattern', expected, pattern);
  if (TENANT_ROLES.includes(kind)) {
    return invalidOption(
      'pattern',
      `${expected}; ${kind}s are keyed under their tenant, as tenant:<t>:${kind}${rest}${star ? '*' : ''}`,
      pattern,
    );
  }
  return invalidOption(
    'pattern',
    `${expected}${typo(kind, KEY_PATTERN_KINDS, (k) => `${k}${rest}${star ? '*' : ''}`)}`,
    pattern,
  );
}

/** `; <fixed> if <given> is a typo`, or nothing when no known word is close. */
function typo(given: string, known: readonly string[], fixed: (word: string) => string): string {
  const word = closestWord(given, known);
  return word === undefined ? '' : `; ${fixed(word)} if ${given} is a typo`;
}

function ipIssue(value: string, star: boolean): string | undefined {
  if (!star || IP_KEY_START.test(value) || 'unknown'.startsWith(value)) return undefined;
  return 'ip: followed by the start of a client key (an address in lower case, a /64 such as 2001:db8::/64, or unknown) before *';
}

function tenantIssue(values: readonly string[], star: boolean): string | undefined {
  const n = values.length;
  const [tenant, role = '', name = ''] = values;
  if (tenant === '' && (n > 1 || !star)) return 'tenant:<t> with a tenant name after tenant:';
  if (n === 1) return undefined;
  if (n === 2 && star && TENANT_ROLES.some((r) => r.startsWith(role))) return undefined;
  if (n === 3 && TENANT_ROLES.includes(role)) {
    return name === '' && !star
      ? `tenant:<t>:${role}:<name> with a name after tenant:${tenant}:${role}:`
      : undefined;
  }
  const end = star ? '*' : '';
  if (n > 3 && TENANT_ROLES.includes(role) && !values.includes('')) {
    return `${TENANT_SHAPE} (tenant:${tenant}:${role}:${escapeLoosely(values.slice(2).join(':'))}${end} for the ${role} "${values.slice(2).join(':')}")`;
  }
  if (n >= 3) {
    const fixed = typo(role, TENANT_ROLES, (r) => `tenant:${tenant}:${r}:${values.slice(2).join(':')}${end}`);
    if (fixed !== '') return `${TENANT_SHAPE}${fixed}`;
  }
  if (values.includes('')) return TENANT_SHAPE;
  const whole = values.join(':');
  // Two names are ambiguous: one tenant whose name holds ":", or a client or user key cut short.
  const cut =
    n === 2 ? `, or tenant:${tenant}:client:${role}${end} or tenant:${tenant}:user:${role}${end}` : '';
  return `${TENANT_SHAPE} (tenant:${escapeLoosely(whole)}${end} for the tenant "${whole}"${cut})`;
}

function apiKeyIssue(values: readonly string[], star: boolean): string | undefined {
  if (values.length === 1 && (star ? API_KEY_HASH_START : API_KEY_HASH).test(values[0])) return undefined;
  return "apikey:<hash>, the 22 base64url characters of the key's SHA-256 as its bucket key holds them (or their start before *)";
}

function paramIssue(values: readonly string[], star: boolean): string | undefined {
  const complete = star ? values.slice(0, -1) : values;
  if (values.length <= 2 && (values.length === 2 || star) && !complete.includes('')) return undefined;
  const expected =
    'param:<name>:<value>, a route parameter and its value, with ":" and "%" inside either written %3A and %25';
  if (values.length > 2 && values[0] !== '' && values[1] !== '') {
    return `${expected} (param:${values[0]}:${escapeLoosely(values.slice(1).join(':'))}${star ? '*' : ''})`;
  }
  return expected;
}

function singleIssue(kind: string, values: readonly string[], star: boolean): string | undefined {
  if (values.length === 1) {
    return values[0] === '' && !star ? `${kind}:<value> with a value after ${kind}:` : undefined;
  }
  const expected = `${kind}:<value>, with ":" and "%" inside the value written %3A and %25 as keys write them`;
  if (values[0] === '') return expected;
  return `${expected} (${kind}:${escapeLoosely(values.join(':'))}${star ? '*' : ''})`;
}

/**
 * A `%` that starts neither `%25` nor `%3A` nor the escape of a key's space, control, non-ASCII character or `*`:
 * no key holds it, since keys escape every `%`.
 */
function strayPercent(part: string): boolean {
  return /%(?!25|3A|[018-9A-Fa-f][0-9A-Fa-f]|2[0Aa]|7[Ff])/.test(part);
}

/** The last part of a prefix without an escape cut short at its end (`50%`, `50%2`), which keys may go on with. */
function partial(part: string): string {
  return part.replace(/%[23]?$/, '');
}

function escapePercent(part: string): string {
  return part.replace(/%(?!25|3A|[018-9A-Fa-f][0-9A-Fa-f]|2[0Aa]|7[Ff])/g, '%25');
}

/** A name as keys write it, keeping escapes the operator already wrote (`%25`, `%3A`). */
function escapeLoosely(name: string): string {
  return escapePercent(name).replaceAll(':', '%3A');
}

/**
 * The known word closest to a mistyped one, when close enough to be a typo: an edit distance (a swapped pair
 * counting as one) of at most a third of the word, and at least one. The gateway has a fuller `closestName`;
 * the library cannot import it.
 */
function closestWord(given: string, known: readonly string[]): string | undefined {
  const limit = Math.max(1, Math.floor(given.length / 3));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const word of known) {
    const d = distance(given.toLowerCase(), word);
    if (d < bestDistance) {
      best = word;
      bestDistance = d;
    }
  }
  return best;
}

/** Optimal string alignment distance. */
function distance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j], before[j - 2] + 1);
      }
    }
    before = previous;
    previous = row;
  }
  return previous[b.length];
}
