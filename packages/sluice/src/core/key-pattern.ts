/**
 * Bucket keys hold identities as given (from tokens and headers): a space, a control or a non-ASCII character
 * stays in the key, and `*` may too. Override patterns are printable ASCII (they are typed, listed, logged and
 * compared as ids), so such a character is written in a pattern as `%XX`, each byte of its UTF-8 form, as in a
 * URL. Keys never hold a `%` other than their own escapes `%25` and `%3A` (`escapeKeyPart`), so every other `%XX`
 * of a pattern reads one way only. Pure string work: the dashboard's browser bundle uses it too.
 */

/** Whether a UTF-16 code unit of a key is written `%XX` in a pattern: outside printable ASCII, or `*`. */
function escaped(code: number): boolean {
  return code < 0x21 || code > 0x7e || code === 0x2a;
}

/** `%XX` escapes a pattern may hold for a key's character: every byte but printable ASCII other than `*`. */
const KEY_ESCAPE_RUN = /(?:%(?:[018-9A-Fa-f][0-9A-Fa-f]|2[0Aa]|7[Ff]))+/g;

/**
 * The pattern naming exactly one bucket key: the key itself, with each space, control, non-ASCII character and
 * `*` written `%XX` (the bytes of its UTF-8 form, upper-case hex). An ordinary key is returned as it is.
 *
 * @param key - a bucket key, without the limiter's key prefix.
 * @returns the pattern, or `undefined` for a key no pattern can name (a lone UTF-16 surrogate).
 *
 * @example
 * ```ts
 * keyAsPattern('principal:john doe'); // 'principal:john%20doe'
 * keyAsPattern('tenant:müller:client:web'); // 'tenant:m%C3%BCller:client:web'
 * ```
 */
export function keyAsPattern(key: string): string | undefined {
  let i = 0;
  while (i < key.length && !escaped(key.charCodeAt(i))) i++;
  if (i === key.length) return key;
  let out = key.slice(0, i);
  for (; i < key.length; i++) {
    const code = key.charCodeAt(i);
    if (!escaped(code)) {
      out += key[i];
      continue;
    }
    let char = key[i];
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < key.length) {
      const low = key.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) char += key[++i];
    }
    try {
      // `*` is the one character encodeURIComponent leaves as it is among those escaped here.
      out += code === 0x2a ? '%2A' : encodeURIComponent(char);
    } catch {
      return undefined;
    }
  }
  return out;
}

/**
 * The key text a pattern names: its `%XX` escapes of spaces, controls, non-ASCII characters and `*` read back,
 * every other character (the key's own `%25` and `%3A` included) kept.
 *
 * @param pattern - a pattern or its part (without a trailing `*`).
 * @returns the text, or `undefined` when an escape is not whole UTF-8 (`%C3` alone).
 */
export function patternAsKey(pattern: string): string | undefined {
  if (pattern.indexOf('%') < 0) return pattern;
  let bad = false;
  const text = pattern.replace(KEY_ESCAPE_RUN, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      bad = true;
      return run;
    }
  });
  return bad ? undefined : text;
}

/**
 * A pattern with its key escapes in upper-case hex (`%c3%bc` as `%C3%BC`), so that one key has one rule id.
 *
 * @param pattern - a pattern.
 */
export function canonicalKeyEscapes(pattern: string): string {
  if (pattern.indexOf('%') < 0) return pattern;
  return pattern.replace(KEY_ESCAPE_RUN, (run) => run.toUpperCase());
}
