import { invalidOption, objectOption, rejectUnknownKeys } from '../core/index.js';

/*
 * One canonical form of a request target, so that the path endpoint rules are matched against is the path the
 * upstream routes on (docs/DECISIONS.md, "Request targets"). Servers disagree about encoded slashes, backslashes,
 * `;` parameters and dot segments produced by decoding; every shape that two parsers could read differently is
 * either refused or rewritten into the one form RFC 3986 (5.2.4, 6.2.2) calls equivalent. The gateway forwards
 * exactly that form, so the upstream never sees anything the matcher did not.
 */

/**
 * What to do with `%2F`, `%5C` and a raw `\` in the path. `reject` (default) refuses them: some servers read them
 * as separators (NGINX and WHATWG parsers), others as data (Node routers), so no single reading is safe.
 * `decode` turns them into `/` before dot segments are removed, for upstreams that treat them as separators.
 */
export type EncodedSlashes = 'reject' | 'decode';

/**
 * What to do with a raw `;` in the path (a path parameter). Servers disagree: Java servlet containers (Tomcat,
 * Jetty, Spring) remove `;x` from each segment before routing (so `/seal;x=1` is `/seal` and `/..;/` a dot
 * segment), Node routers, NGINX and Flask keep it as part of the segment. `reject` (default) refuses it, since
 * no single path is right. `strip` removes everything from a raw `;` to the end of its segment before dot
 * segments are resolved, as servlet containers do (the gateway then forwards the stripped path). `keep` leaves
 * it in its segment: only for upstreams that never strip parameters.
 */
export type PathParameters = 'reject' | 'strip' | 'keep';

/** Options of {@link compileTargetCanonicalizer}. */
export interface TargetOptions {
  /** See {@link EncodedSlashes}; default `reject`. */
  readonly encodedSlashes?: EncodedSlashes;
  /** See {@link PathParameters}; default `reject`. */
  readonly pathParameters?: PathParameters;
}

/** Options of a canonicalizer after validation and defaults. */
export interface ResolvedTargetOptions {
  readonly encodedSlashes: EncodedSlashes;
  readonly pathParameters: PathParameters;
}

/** Why a request target was refused; a caller answers 400 with the refusal's `detail`. */
export type TargetRefusalCode =
  | 'fragment'
  | 'encoded_separator'
  | 'backslash'
  | 'bad_percent_encoding'
  | 'not_origin_form'
  | 'control_character'
  | 'encoded_control_character'
  | 'non_ascii'
  | 'path_parameter';

/** A refused request target. Each is a frozen constant from {@link TARGET_REFUSALS}: refusing allocates nothing. */
export interface TargetRefusal {
  readonly ok: false;
  readonly code: TargetRefusalCode;
  /** One English sentence for the `detail` of a 400 problem body; it never repeats the target. */
  readonly detail: string;
}

/** An accepted request target in canonical form. */
export interface AcceptedTarget {
  readonly ok: true;
  /** The canonical path: starts with `/`, no empty or dot segment, unreserved characters decoded. */
  readonly path: string;
  /** `''`, or the query from its `?` on, byte for byte as sent. */
  readonly query: string;
}

/** The outcome of canonicalizing a request target. */
export type CanonicalTarget = AcceptedTarget | TargetRefusal;

function refusal(code: TargetRefusalCode, detail: string): TargetRefusal {
  return Object.freeze({ ok: false as const, code, detail });
}

/** Every refusal, by code. The constants are the values returned, so `===` comparisons hold. */
export const TARGET_REFUSALS: Readonly<Record<TargetRefusalCode, TargetRefusal>> = Object.freeze({
  fragment: refusal(
    'fragment',
    'The request target contains a fragment ("#"), which a client never sends and servers strip in different ways.',
  ),
  encoded_separator: refusal(
    'encoded_separator',
    'The request path contains an encoded slash or backslash (%2F or %5C), which servers disagree about.',
  ),
  backslash: refusal(
    'backslash',
    'The request path contains a backslash, which some servers read as a slash; send "/" or "%5C" instead.',
  ),
  bad_percent_encoding: refusal(
    'bad_percent_encoding',
    'The request path contains a "%" that is not followed by two hexadecimal digits.',
  ),
  not_origin_form: refusal(
    'not_origin_form',
    'The request target must be a path starting with "/"; absolute and asterisk forms are not accepted.',
  ),
  control_character: refusal(
    'control_character',
    'The request target contains a space or a control character, which must be percent-encoded.',
  ),
  encoded_control_character: refusal(
    'encoded_control_character',
    'The request path contains a percent-encoded control character (%00 to %1F, %7F), which servers decode differently: a NUL ends the path in some.',
  ),
  non_ascii: refusal(
    'non_ascii',
    'The request target contains a character outside ASCII, which must be percent-encoded as UTF-8.',
  ),
  path_parameter: refusal(
    'path_parameter',
    'The request path contains a ";" path parameter, which some servers remove before routing and others keep; send it percent-encoded as %3B.',
  ),
});

// Refusals by position, so that the scan can return one number: -(index + 1) for a refusal.
const ORDER: readonly TargetRefusal[] = [
  TARGET_REFUSALS.fragment,
  TARGET_REFUSALS.encoded_separator,
  TARGET_REFUSALS.backslash,
  TARGET_REFUSALS.bad_percent_encoding,
  TARGET_REFUSALS.not_origin_form,
  TARGET_REFUSALS.control_character,
  TARGET_REFUSALS.non_ascii,
  TARGET_REFUSALS.path_parameter,
  TARGET_REFUSALS.encoded_control_character,
];
const FRAGMENT = -1;
const ENCODED_SEPARATOR = -2;
const BACKSLASH = -3;
const BAD_PERCENT = -4;
const NOT_ORIGIN = -5;
const CONTROL = -6;
const NON_ASCII = -7;
const PATH_PARAMETER = -8;
const ENCODED_CONTROL = -9;

const SLASH = 0x2f;
const BACK = 0x5c;
const DOT = 0x2e;
const PERCENT = 0x25;
const QUESTION = 0x3f;
const HASH = 0x23;
const SEMI = 0x3b;
const HEX = '0123456789ABCDEF';
const SEMI_REJECT = 0;
const SEMI_STRIP = 1;
const SEMI_KEEP = 2;

/**
 * A compiled canonicalizer: call it with a request target (`req.url`), or use `path` for a path with an optional
 * query that should come back as one string.
 */
export interface TargetCanonicalizer {
  /** Canonicalizes a request target; never throws. */
  (target: string): CanonicalTarget;
  /**
   * The canonical path followed by the query as sent, or the refusal. Returns the very string given when it is
   * canonical already, so a caller can test `result === input`.
   */
  readonly path: (pathAndQuery: string) => string | TargetRefusal;
  /** The resolved options. */
  readonly options: ResolvedTargetOptions;
}

/**
 * Validates the options once and returns the canonicalizer. Canonical form: percent-encoded unreserved
 * characters decoded, other percent-encodings kept with upper-case hex, repeated slashes collapsed, dot segments
 * (those produced by decoding too) removed with `..` stopping at the root, case kept (path patterns compare
 * ASCII case-insensitively). A target without `%`, `\`, `//`, dot segment or (when stripping) `;` is returned
 * as it is, without building strings.
 *
 * @param options - see {@link TargetOptions}.
 * @param optionPath - the option's path for error messages, for example `gateway.target`.
 * @throws SluiceError `ERR_INVALID_OPTION` for an unknown key or a value outside the modes.
 *
 * @example
 * ```ts
 * const canonical = compileTargetCanonicalizer();
 * canonical('/api//risk/./%73tudio?x=1'); // { ok: true, path: '/api/risk/studio', query: '?x=1' }
 * canonical('/system/airgap%2Fseal');      // { ok: false, code: 'encoded_separator', detail: '...' }
 * ```
 */
export function compileTargetCanonicalizer(
  options?: TargetOptions,
  optionPath = 'target',
): TargetCanonicalizer {
  const resolved = resolveOptions(options, optionPath);
  const decode = resolved.encodedSlashes === 'decode';
  const strip = resolved.pathParameters === 'strip';
  const semi = resolved.pathParameters === 'reject' ? SEMI_REJECT : strip ? SEMI_STRIP : SEMI_KEEP;
  // The last target scanned and what the scan said: a proxy canonicalizes a request's target, then its admission
  // asks for the path of the same target, and the second scan of every character is spared for one comparison.
  let lastTarget: string | undefined;
  let lastScan = 0;
  const scanned = (t: string): number => {
    if (t === lastTarget) return lastScan;
    lastScan = scan(t, decode, semi);
    lastTarget = t;
    return lastScan;
  };
  const canonicalize = (target: string): CanonicalTarget => {
    const r = scanned(target);
    if (r < 0) return ORDER[-r - 1];
    const end = r >>> 1;
    const query = end === target.length ? '' : target.slice(end);
    if ((r & 1) === 0)
      return { ok: true, path: end === target.length ? target : target.slice(0, end), query };
    const path = rewrite(target, end, decode, strip);
    return typeof path === 'string' ? { ok: true, path, query } : path;
  };
  const path = (pathAndQuery: string): string | TargetRefusal => {
    const r = scanned(pathAndQuery);
    if (r < 0) return ORDER[-r - 1];
    if ((r & 1) === 0) return pathAndQuery;
    const end = r >>> 1;
    const p = rewrite(pathAndQuery, end, decode, strip);
    if (typeof p !== 'string') return p;
    const whole = end === pathAndQuery.length ? p : p + pathAndQuery.slice(end);
    return whole === pathAndQuery ? pathAndQuery : whole;
  };
  return Object.freeze(Object.assign(canonicalize, { path, options: resolved }));
}

const DEFAULT = compileTargetCanonicalizer();

/**
 * {@link TargetCanonicalizer.path} with the default options (`encodedSlashes: 'reject'`, `pathParameters: 'reject'`):
 * the canonical path and the query as sent, the same string instance when already canonical, or the refusal.
 */
export function canonicalPath(pathAndQuery: string): string | TargetRefusal {
  return DEFAULT.path(pathAndQuery);
}

function resolveOptions(options: TargetOptions | undefined, optionPath: string): ResolvedTargetOptions {
  if (options === undefined) return Object.freeze({ encodedSlashes: 'reject', pathParameters: 'reject' });
  const o = objectOption(optionPath, options);
  rejectUnknownKeys(optionPath, o, ['encodedSlashes', 'pathParameters']);
  return Object.freeze({
    encodedSlashes: oneOf(`${optionPath}.encodedSlashes`, o.encodedSlashes, ['reject', 'decode'] as const),
    pathParameters: oneOf(`${optionPath}.pathParameters`, o.pathParameters, [
      'reject',
      'strip',
      'keep',
    ] as const),
  });
}

function oneOf<T extends string>(option: string, value: unknown, allowed: readonly [T, ...T[]]): T {
  if (value === undefined) return allowed[0];
  if (!allowed.includes(value as T)) throw invalidOption(option, `one of ${allowed.join(', ')}`, value);
  return value as T;
}

/**
 * One pass over the whole target without allocating. Returns a refusal as a negative number, else
 * `end * 2 + dirty`: `end` is where the query starts (the length when none), `dirty` is 1 when the path needs
 * {@link rewrite}. The query is only checked for characters that may never appear in a target. `semi` is one of
 * the `SEMI_` modes: what a raw `;` in the path does.
 */
function scan(t: string, decode: boolean, semi: number): number {
  const n = t.length;
  if (n === 0 || t.charCodeAt(0) !== SLASH) return NOT_ORIGIN;
  let end = n;
  let dirty = 0;
  for (let i = 0; i < n; i++) {
    const c = t.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return CONTROL;
    if (c > 0x7e) return NON_ASCII;
    if (c === HASH) return FRAGMENT;
    if (end !== n) continue;
    if (c === QUESTION) end = i;
    else if (c === PERCENT) dirty = 1;
    else if (c === BACK) {
      if (!decode) return BACKSLASH;
      dirty = 1;
    } else if (c === SEMI) {
      if (semi === SEMI_REJECT) return PATH_PARAMETER;
      if (semi === SEMI_STRIP) dirty = 1;
    } else if (c === SLASH) {
      const d = t.charCodeAt(i + 1);
      if (d === SLASH) dirty = 1;
      else if (d === DOT) {
        const e = t.charCodeAt(i + 2);
        if (ends(e) || (e === DOT && ends(t.charCodeAt(i + 3)))) dirty = 1;
      }
    }
  }
  return end * 2 + dirty;
}

/** True at the end of a segment: past the string's end (NaN), `/` or the start of the query. */
function ends(c: number): boolean {
  return Number.isNaN(c) || c === SLASH || c === QUESTION;
}

/** The canonical path of `t[0, end)`, which {@link scan} found dirty. */
function rewrite(t: string, end: number, decode: boolean, strip: boolean): string | TargetRefusal {
  const out: string[] = [];
  let seg = '';
  let from = 1;
  let i = 1;
  let trailing = false;
  for (;;) {
    if (i >= end) {
      trailing = close(out, seg + t.slice(from, end), true);
      break;
    }
    const c = t.charCodeAt(i);
    if (c === SLASH || c === BACK) {
      // A backslash reaches here only in decode mode; scan refused it otherwise.
      close(out, seg + t.slice(from, i), false);
      seg = '';
      from = ++i;
    } else if (c === PERCENT) {
      const hi = hexValue(t.charCodeAt(i + 1));
      const lo = hexValue(t.charCodeAt(i + 2));
      if (hi < 0 || lo < 0) return ORDER[-BAD_PERCENT - 1];
      const b = hi * 16 + lo;
      if (b < 0x20 || b === 0x7f) return ORDER[-ENCODED_CONTROL - 1];
      seg += t.slice(from, i);
      if (unreserved(b)) seg += String.fromCharCode(b);
      else if (b === SLASH || b === BACK) {
        if (!decode) return ORDER[-ENCODED_SEPARATOR - 1];
        close(out, seg, false);
        seg = '';
      } else seg += `%${HEX[hi]}${HEX[lo]}`;
      i += 3;
      from = i;
    } else if (c === SEMI && strip) {
      // Servlet containers cut parameters from the raw segment, before decoding, up to the next raw separator.
      seg += t.slice(from, i);
      while (i < end && t.charCodeAt(i) !== SLASH && !(decode && t.charCodeAt(i) === BACK)) i++;
      from = i;
    } else i++;
  }
  const body = out.join('/');
  return trailing && out.length > 0 ? `/${body}/` : `/${body}`;
}

/**
 * Adds one segment to the output, resolving it as RFC 3986 5.2.4 does: empty and `.` segments vanish, `..` removes
 * the last segment (never above the root). Returns whether a last segment leaves a trailing slash.
 */
function close(out: string[], seg: string, last: boolean): boolean {
  if (seg === '' || seg === '.') return last;
  if (seg === '..') {
    out.pop();
    return last;
  }
  out.push(seg);
  return false;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/** ALPHA, DIGIT, `-`, `.`, `_`, `~` (RFC 3986 2.3). */
function unreserved(b: number): boolean {
  return (
    (b >= 0x41 && b <= 0x5a) ||
    (b >= 0x61 && b <= 0x7a) ||
    (b >= 0x30 && b <= 0x39) ||
    b === 0x2d ||
    b === DOT ||
    b === 0x5f ||
    b === 0x7e
  );
}
