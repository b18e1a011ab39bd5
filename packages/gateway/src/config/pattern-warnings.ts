import { canonicalPath } from 'sluice/http';

/** How request paths are made canonical: `canonicalPath`, or the `.path` of the `target:` section's canonicalizer. */
export type CanonicalPathOf = typeof canonicalPath;

/** What is wrong with one path pattern, before its position is known. */
export interface PatternFinding {
  readonly code: 'W_PATTERN_NEVER_MATCHES' | 'W_PATTERN_QUERY';
  readonly message: string;
  readonly suggestion: string;
}

/** Request target refusals (`sluice/http`) in the words of a pattern that contains what they refuse. */
const REFUSED: Readonly<Record<string, { message: string; suggestion: string }>> = {
  fragment: {
    message: 'contains "#": clients never send a fragment and the gateway refuses a target with one',
    suggestion: 'remove everything from "#" on',
  },
  backslash: {
    message:
      'contains a backslash: the gateway refuses a request path with one (some servers read it as "/")',
    suggestion: 'use "/" between segments',
  },
  encoded_separator: {
    message:
      'contains an encoded slash or backslash (%2F or %5C), which the gateway refuses in a request path',
    suggestion: 'use "/" between segments',
  },
  bad_percent_encoding: {
    message:
      'contains a "%" not followed by two hexadecimal digits, which the gateway refuses in a request path',
    suggestion: 'write a literal "%" as "%25"',
  },
  control_character: {
    message: 'contains a space or a control character, which a request path never holds unencoded',
    suggestion: 'percent-encode it (a space is "%20")',
  },
  non_ascii: {
    message: 'contains a character outside ASCII, which a request path never holds unencoded',
    suggestion: 'percent-encode it as UTF-8',
  },
  path_parameter: {
    message:
      'contains a ";" path parameter, which the gateway refuses in a request path (target.pathParameters: reject) or removes (strip)',
    suggestion: 'remove the ";" parameter, or write it as "%3B" when it is part of the segment',
  },
};

const UNRESERVED_ESCAPE = /%(2[DEde]|3[0-9]|4[1-9A-Fa-f]|5[0-9Aa]|5[Ff]|6[1-9A-Fa-f]|7[0-9Aa]|7[Ee])/g;

/**
 * The problems of one path pattern (`/api/*`, `/hooks/:id`): a pattern the gateway can never match, because
 * requests are matched in canonical form (`canonicalPath` of `sluice/http`: unreserved characters decoded, dot
 * segments resolved, fragments, backslashes and encoded slashes refused), and a query, which matching ignores.
 *
 * @param pattern - the pattern as written.
 * @param rewrite - renders a corrected pattern as the user would write it (an exemption keeps its methods).
 * @param canonical - how request paths are made canonical (the `target:` section); default the library's default.
 */
export function patternFindings(
  pattern: string,
  rewrite: (p: string) => string = (p) => p,
  canonical: CanonicalPathOf = canonicalPath,
): PatternFinding[] {
  const out: PatternFinding[] = [];
  const q = pattern.indexOf('?');
  const hash = pattern.indexOf('#');
  const path = q >= 0 && (hash < 0 || q < hash) ? pattern.slice(0, q) : pattern;
  if (path !== pattern) {
    out.push({
      code: 'W_PATTERN_QUERY',
      message: `the query "${pattern.slice(q)}" is ignored: rules match the path alone, so this rule applies whatever the query`,
      suggestion: `write "${rewrite(path)}"; rules cannot tell requests apart by their query`,
    });
  }
  const form = canonical(path);
  if (typeof form !== 'string') {
    const r = REFUSED[form.code] ?? { message: form.detail, suggestion: 'rewrite the pattern' };
    out.push({
      code: 'W_PATTERN_NEVER_MATCHES',
      message: `never matches: it ${r.message}`,
      suggestion: r.suggestion,
    });
    return out;
  }
  // Patterns compare ASCII case-insensitively, so "%3a" and the canonical "%3A" are the same pattern.
  if (form.toLowerCase() !== path.toLowerCase()) {
    const reasons = [...new Set(path.match(UNRESERVED_ESCAPE) ?? [])].map(
      (e) => `"${e}" is decoded to "${String.fromCharCode(Number.parseInt(e.slice(1), 16))}"`,
    );
    if (/\/\.{1,2}(\/|$)/.test(path)) reasons.push('dot segments ("." and "..") are resolved');
    if (path.includes('//')) reasons.push('repeated slashes are collapsed');
    if (path.includes(';')) reasons.push('";" path parameters are removed (target.pathParameters: strip)');
    out.push({
      code: 'W_PATTERN_NEVER_MATCHES',
      message: `never matches: request paths are matched in canonical form (${reasons.join('; ')})`,
      suggestion: `write "${rewrite(form)}"`,
    });
  }
  return out;
}

/**
 * A key equal for two patterns that match the same paths: case folded, query and one trailing slash ignored,
 * `:name` and a middle `*` both one segment (a last `*` is its prefix and everything below).
 *
 * @param pattern - the pattern as written.
 */
export function patternKey(pattern: string): string {
  const q = pattern.indexOf('?');
  let path = q < 0 ? pattern : pattern.slice(0, q);
  const canonical = canonicalPath(path);
  if (typeof canonical === 'string') path = canonical;
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  const parts = path.toLowerCase().split('/');
  return parts.map((s, i) => (s.startsWith(':') || (s === '*' && i < parts.length - 1) ? ':' : s)).join('/');
}

/**
 * True when two method lists share a method; an empty or missing list means every method, and `GET` covers
 * `HEAD` as the matcher does.
 */
export function methodsOverlap(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === undefined || b === undefined || a.length === 0 || b.length === 0) return true;
  const withHead = (l: readonly string[]) => new Set(l.includes('GET') ? [...l, 'HEAD'] : l);
  const sa = withHead(a);
  for (const m of withHead(b)) if (sa.has(m)) return true;
  return false;
}
