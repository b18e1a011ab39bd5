/*
 * One place decides what a secret is, so validation output, logs, the admin API's effective configuration and
 * the dashboard's configuration view cannot disagree: values of fields named like a password, secret, token,
 * API key or private key; the password part of a URL's user info (`redis://user:***@host`) and secret query
 * parameters; private members of a JSON Web Key; PEM private key text.
 */

/** What a secret value is replaced with in the effective configuration and in messages. */
export const REDACTED = '[redacted]';

/**
 * What a URL's password is replaced with. It stays a valid user info character sequence, so a redacted URL still
 * parses and shows which user and host are configured.
 */
export const URL_PASSWORD_MASK = '***';

/** Field name endings (lower case, without `_` and `-`) that hold a secret. */
const SECRET_SUFFIXES = [
  'password',
  'passwd',
  'passphrase',
  'secret',
  'token',
  'apikey',
  'privatekey',
  'accesskey',
  'credential',
  'credentials',
];

/** Members of a JSON Web Key that are key material (RFC 7518 section 6): symmetric and private parts. */
const JWK_PRIVATE = new Set(['k', 'd', 'p', 'q', 'dp', 'dq', 'qi', 'oth']);

/**
 * Secrets shorter than this are not searched for in free text: replacing every `123` in a message would mangle
 * it. Such values are still redacted where they stand (their own field, their own violation).
 */
const MIN_SCRUB_LENGTH = 4;

// A scheme of at most 32 characters keeps the scan linear; user info runs to the last "@" of the authority.
const URL_USERINFO = /([A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/)([^\s/?#"<>\\]*)@/g;
const SECRET_QUERY =
  /([?&;](?:password|passwd|pass|pwd|secret|token|access_token|api[_-]?key|apikey|auth)=)[^&#\s"<>\\]*/gi;

/**
 * True when a field of this name holds a secret: names ending in password, secret, token, apiKey, privateKey,
 * credential(s) and the like, in any case, with or without `_` and `-` (`jwtSecret`, `api_key`, `token`).
 * Plural container names (`apiKeys`, `tokens`) are not secrets themselves.
 *
 * @param name - a field name; array indexes are never secret names.
 */
export function isSecretName(name: string | number): boolean {
  if (typeof name !== 'string') return false;
  const n = name.toLowerCase().replace(/[-_]/g, '');
  return SECRET_SUFFIXES.some((s) => n.endsWith(s));
}

/**
 * Masks credentials in every URL of a text: the password of the user info (`redis://user:***@host`), the whole
 * user info when it has no `:` (a token: `https://***@host`), and secret query parameters (`?password=***`).
 *
 * @param text - any text: a URL, a message, a log line.
 * @returns the text with credentials masked; the same string when there were none.
 */
export function redactUrls(text: string): string {
  let out = text;
  if (out.includes('://')) {
    out = out.replace(URL_USERINFO, (whole, scheme: string, info: string) => {
      if (info === '') return whole;
      const colon = info.indexOf(':');
      return colon < 0
        ? `${scheme}${URL_PASSWORD_MASK}@`
        : `${scheme}${info.slice(0, colon)}:${URL_PASSWORD_MASK}@`;
    });
  }
  if (out.includes('=')) out = out.replace(SECRET_QUERY, `$1${URL_PASSWORD_MASK}`);
  return out;
}

/**
 * A copy of a configuration (or any plain data) safe to show: values of secret fields replaced by
 * {@link REDACTED}, credentials in URLs masked, JWK private members and PEM private keys replaced. Used for the
 * admin API's `GET /config`, which the dashboard's configuration view renders.
 *
 * @param value - the configuration; not modified (it may be frozen).
 */
export function redactConfig(value: unknown): unknown {
  if (typeof value === 'string') return isPrivateKeyText(value) ? REDACTED : redactUrls(value);
  if (Array.isArray(value)) return value.map(redactConfig);
  if (typeof value !== 'object' || value === null) return value;
  const jwk = 'kty' in value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const secret = (isSecretName(k) || (jwk && JWK_PRIVATE.has(k))) && isSecretValue(v);
    out[k] = secret ? REDACTED : redactConfig(v);
  }
  return out;
}

/**
 * The secret values found in raw configuration data (after `${ENV}` substitution): values of secret fields,
 * URL passwords and secret query values, JWK private members, PEM private keys. Values shorter than four
 * characters are left out (see {@link redactText}).
 *
 * @param data - the parsed configuration, valid or not.
 * @returns distinct values, longest first, so that a secret containing another is replaced whole.
 */
export function secretsIn(data: unknown): string[] {
  const found = new Set<string>();
  const add = (s: string) => {
    if (s.length >= MIN_SCRUB_LENGTH) found.add(s);
  };
  const walk = (v: unknown, depth: number): void => {
    if (depth > 64) return;
    if (typeof v === 'string') {
      if (isPrivateKeyText(v)) add(v);
      for (const s of urlSecrets(v)) add(s);
      return;
    }
    if (Array.isArray(v)) {
      for (const item of v) walk(item, depth + 1);
      return;
    }
    if (typeof v !== 'object' || v === null) return;
    const jwk = 'kty' in v;
    for (const [k, item] of Object.entries(v)) {
      if ((isSecretName(k) || (jwk && JWK_PRIVATE.has(k))) && isSecretValue(item)) add(String(item));
      else walk(item, depth + 1);
    }
  };
  walk(data, 0);
  return [...found].sort((a, b) => b.length - a.length);
}

/**
 * Scrubs a message built from configuration: credentials in URLs are masked, then every known secret value is
 * replaced by {@link REDACTED}. Validation messages and log messages go through it.
 *
 * @param text - the message.
 * @param secrets - values from {@link secretsIn}.
 */
export function redactText(text: string, secrets: readonly string[] = []): string {
  let out = redactUrls(text);
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}

function urlSecrets(text: string): string[] {
  const out: string[] = [];
  if (text.includes('://')) {
    for (const m of text.matchAll(URL_USERINFO)) {
      const info = m[2];
      const colon = info.indexOf(':');
      out.push(colon < 0 ? info : info.slice(colon + 1));
    }
  }
  if (text.includes('=')) {
    for (const m of text.matchAll(SECRET_QUERY)) out.push(m[0].slice(m[1].length));
  }
  return out;
}

/** A value that can be a secret: a string or a number (a YAML password of digits). A flag never is. */
function isSecretValue(v: unknown): v is string | number | bigint {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint';
}

function isPrivateKeyText(s: string): boolean {
  return s.includes('-----BEGIN') && s.includes('PRIVATE KEY');
}
