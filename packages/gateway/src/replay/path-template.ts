/**
 * The path template of a request target: the query dropped, and every segment that is a number or a UUID folded,
 * so `/api/items/42?x=1` and `/api/items/7` are both `/api/items/:id`; empty segments are dropped. A folded segment
 * in the middle is `*` (one segment, in the gateway's patterns) and the last one is `:id`: a last `*` would, as an
 * endpoint rule, also take every path below it (`/api/items/7/parts`), which the template did not measure.
 * Segments are compared as they are (no case folding: the gateway's own patterns compare literals
 * case-insensitively anyway).
 *
 * @param target - the request target (origin form).
 */
export function pathTemplate(target: string): string {
  let end = target.indexOf('?');
  if (end < 0) end = target.length;
  const hash = target.indexOf('#');
  if (hash >= 0 && hash < end) end = hash;
  let out = '';
  let start = 1;
  while (start <= end) {
    let slash = target.indexOf('/', start);
    if (slash < 0 || slash > end) slash = end;
    // Empty segments (`//`, a trailing slash) are dropped, as the gateway's patterns ignore them.
    if (slash > start) {
      if (!isVariable(target, start, slash)) out += `/${target.slice(start, slash)}`;
      else out += onlySlashes(target, slash, end) ? '/:id' : '/*';
    }
    start = slash + 1;
  }
  return out === '' ? '/' : out;
}

/** A segment of digits only, or a UUID (8-4-4-4-12 hex digits). */
function isVariable(s: string, from: number, to: number): boolean {
  let digits = true;
  for (let i = from; i < to && digits; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) digits = false;
  }
  if (digits) return true;
  if (to - from !== 36) return false;
  for (let i = 0; i < 36; i++) {
    const c = s.charCodeAt(from + i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 45) return false;
    } else if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70))) return false;
  }
  return true;
}

/** True when `s[from, to)` holds nothing but slashes: the segment before `from` is the path's last. */
function onlySlashes(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (s.charCodeAt(i) !== 47) return false;
  return true;
}
