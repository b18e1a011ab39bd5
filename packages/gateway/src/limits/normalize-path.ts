const UNRESERVED = /%(2[DEde]|3[0-9]|4[1-9A-Fa-f]|5[0-9Aa]|5[Ff]|6[1-9A-Fa-f]|7[0-9Aa]|7[Ee])/g;

/**
 * The path that limits are matched against and that is forwarded: percent-encoded unreserved characters
 * decoded, repeated slashes collapsed and dot segments resolved (RFC 3986 section 6.2.2), so that
 * `/api//risk/./simulation/%73tudio/x` cannot slip past the rule for `/api/risk/simulation/studio/*`. Encoded
 * slashes and other reserved characters stay encoded: they mean something else.
 *
 * @param rawPath - the request target's path, without the query.
 */
export function normalizePath(rawPath: string): string {
  let p = rawPath.includes('%')
    ? rawPath.replace(UNRESERVED, (m) => String.fromCharCode(Number.parseInt(m.slice(1), 16)))
    : rawPath;
  if (p.includes('//')) p = p.replace(/\/{2,}/g, '/');
  if (!p.includes('/.')) return p;
  const out: string[] = [];
  const segments = p.split('/');
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i];
    if (s === '.') {
      if (i === segments.length - 1) out.push('');
      continue;
    }
    if (s === '..') {
      if (out.length > 1) out.pop();
      if (i === segments.length - 1) out.push('');
      continue;
    }
    out.push(s);
  }
  const joined = out.join('/');
  return joined.startsWith('/') ? joined : `/${joined}`;
}
