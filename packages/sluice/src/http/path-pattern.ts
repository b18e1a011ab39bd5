import { invalidOption } from '../core/index.js';

/*
 * Path patterns, compiled once into a list of segments and matched by walking the path with indexOf: no regular
 * expression, so matching is linear in the path's length whatever the pattern or the input (no backtracking).
 *
 * Syntax (docs/DECISIONS.md D-H03, "Path patterns and rule precedence"; the sluice/http README, "Rules and path
 * patterns"):
 *   /health               literal segments, compared ASCII case-insensitively (Express routes that way);
 *                         exemptions compare them exactly (see PathPatternOptions.caseSensitive)
 *   /hooks/:webhook_id    `:name` matches one non-empty segment and captures it as a route parameter
 *   /api/* /items         `*` in the middle matches exactly one non-empty segment
 *   /api/studio/*         `*` as the last segment matches the remaining segments and the prefix itself
 *                         (`/api/studio`, `/api/studio/`), which routers serve below the prefix
 * A query string is ignored; one trailing slash is insignificant (`/health/` is `/health`). Exemptions
 * (`compileEndpoint`) match one or more segments only: an exemption never takes the prefix from an exact rule.
 */

const Kind = { Literal: 0, Param: 1, One: 2, Rest: 3, ExactLiteral: 4 } as const;
type Kind = (typeof Kind)[keyof typeof Kind];

interface Segment {
  readonly kind: Kind;
  /** Literal text (lower case for `Literal`, as written for `ExactLiteral`); or the parameter name. */
  readonly text: string;
}

/** A compiled path pattern. */
export interface PathPattern {
  /** The pattern as written. */
  readonly source: string;
  /** Names of `:name` captures, in order. */
  readonly params: readonly string[];
  /** Segments in the pattern (`/api/*` has two): a {@link PathSegments} cut this deep serves it. */
  readonly depth: number;
  /** True when the path (query and one trailing slash ignored) matches. */
  match(path: string): boolean;
  /**
   * {@link PathPattern.match} on a path already cut into segments: several patterns matched against one path
   * share one cut (the rules of a limiter do).
   *
   * @param segments - the path, cut at least {@link PathPattern.depth} segments deep.
   */
  matchSegments(segments: PathSegments): boolean;
  /** The captured parameters of a path that {@link PathPattern.match}es; `undefined` when it does not. */
  capture(path: string): Record<string, string> | undefined;
}

/** Options of {@link compilePathPattern}. */
export interface PathPatternOptions {
  /**
   * Whether a trailing `/*` also matches its prefix itself, with or without a trailing slash (`/a/*` matches
   * `/a` and `/a/`, `/*` matches `/`); default true. NGINX's `location /a/`, Fastify's `/a/*` and `/a/:x`, a
   * servlet mapping `/a/*` and an Express router mounted at `/a` serve the prefix with the routes below it, so
   * a rule for `/a/*` that left the prefix out would let it pass uncounted. Exemptions set it to false.
   */
  readonly includePrefix?: boolean;
  /**
   * Whether literal segments must match in the same ASCII case; default false. Rules compare without case, the
   * safe side for a limit (a path in another case is counted too). An exemption is the other way round: a
   * case-sensitive upstream (Fastify by default, Go's ServeMux, NGINX `location`) serves `/.WELL-KNOWN/x` through
   * a parameter or catch-all route that the rules protect, not through the exempt one, so exemptions set it.
   */
  readonly caseSensitive?: boolean;
}

/**
 * Compiles a path pattern.
 *
 * @param source - the pattern, starting with `/`.
 * @param option - the option path for error messages.
 * @param options - see {@link PathPatternOptions}.
 * @throws SluiceError `ERR_INVALID_OPTION` for a pattern not starting with `/`, an empty segment, a `*` or `:`
 * inside a segment, or a parameter without a name.
 *
 * @example
 * ```ts
 * const p = compilePathPattern('/hooks/:webhook_id');
 * p.match('/hooks/abc?x=1'); // true
 * p.capture('/hooks/abc');   // { webhook_id: 'abc' }
 * ```
 */
export function compilePathPattern(
  source: string,
  option = 'pattern',
  options: PathPatternOptions = {},
): PathPattern {
  const includePrefix = options.includePrefix !== false;
  const exact = options.caseSensitive === true;
  if (typeof source !== 'string' || source.charCodeAt(0) !== 47 /* / */) {
    throw invalidOption(option, 'a path pattern starting with "/"', source);
  }
  const raw = trimPath(source);
  const segments: Segment[] = [];
  const params: string[] = [];
  if (raw !== '/') {
    const parts = raw.slice(1).split('/');
    parts.forEach((part, i) => {
      if (part === '') throw invalidOption(option, 'a path pattern without empty segments ("//")', source);
      if (part === '*') {
        segments.push({ kind: i === parts.length - 1 ? Kind.Rest : Kind.One, text: '' });
      } else if (part.charCodeAt(0) === 58 /* : */) {
        const name = part.slice(1);
        if (name === '' || name.includes(':') || name.includes('*')) {
          throw invalidOption(option, 'a parameter segment of the form ":name"', source);
        }
        params.push(name);
        segments.push({ kind: Kind.Param, text: name });
      } else if (part.includes('*') || part.includes(':')) {
        throw invalidOption(option, '"*" and ":name" only as whole segments', source);
      } else {
        segments.push(
          exact ? { kind: Kind.ExactLiteral, text: part } : { kind: Kind.Literal, text: part.toLowerCase() },
        );
      }
    });
  }
  const frozen = Object.freeze(segments);
  // A pattern matched on its own cuts the path into its own reusable cut (matching is synchronous).
  const own = new PathSegments(frozen.length);
  const compiled: PathPattern = Object.freeze({
    source,
    params: Object.freeze(params),
    depth: frozen.length,
    match: (path: string) => walk(frozen, own.cut(path), includePrefix, undefined),
    matchSegments: (cut: PathSegments) => walk(frozen, cut, includePrefix, undefined),
    capture(path: string) {
      const out: Record<string, string> = {};
      return walk(frozen, own.cut(path), includePrefix, out) ? out : undefined;
    },
  });
  const first = frozen[0];
  if (first !== undefined && (first.kind === Kind.Literal || first.kind === Kind.ExactLiteral)) {
    FIRST_LITERALS.set(compiled, { text: first.text, exact: first.kind === Kind.ExactLiteral });
  }
  return compiled;
}

/** A pattern's first segment when it is literal: its text (lower case unless `exact`) and whether case counts. */
export interface FirstLiteral {
  readonly text: string;
  readonly exact: boolean;
}

const FIRST_LITERALS = new WeakMap<PathPattern, FirstLiteral>();

/**
 * The first segment a path must have for `pattern` to match it, or `undefined` when any may do (a pattern that
 * starts with a parameter or `*`, or `/` itself): several patterns matched against one path compare its first
 * segment once with each distinct literal, and walk only the patterns it leaves possible.
 */
export function firstLiteralOf(pattern: PathPattern): FirstLiteral | undefined {
  return FIRST_LITERALS.get(pattern);
}

/**
 * Whether the first segment of a cut path is `first`: false whenever a pattern starting with `first` cannot match
 * the path (the first step of its walk, alone).
 */
export function firstSegmentIs(cut: PathSegments, first: FirstLiteral): boolean {
  if (!cut.rooted) return false;
  const pos = cut.starts[0];
  if (pos > cut.end || cut.ends[0] - pos !== first.text.length) return false;
  return first.exact ? cut.path.startsWith(first.text, pos) : equalsLower(cut.path, pos, first.text);
}

/** The path without query string and without one trailing slash (the root stays `/`). */
function trimPath(path: string): string {
  const q = path.indexOf('?');
  let end = q < 0 ? path.length : q;
  if (end > 1 && path.charCodeAt(end - 1) === 47) end--;
  return end === path.length ? path : path.slice(0, end);
}

/**
 * A path cut into segments once, so that many patterns match it without each searching it again: where the
 * query starts, where the path ends without one trailing slash, and where each segment starts and ends. Reused
 * from request to request (one per limiter), so cutting allocates nothing.
 */
export class PathSegments {
  /** The path last cut. */
  path = '';
  /** False when the path does not start with `/` (no pattern matches it). */
  rooted = false;
  /** Where the query starts (the path's length without one). */
  queryAt = 0;
  /** Where the path ends, without the query and one trailing slash. */
  end = 0;
  /** Segment i spans `[starts[i], ends[i])`; filled while the path lasts, up to the depth. */
  readonly starts: Int32Array;
  readonly ends: Int32Array;
  readonly #depth: number;

  /** @param depth - the most segments a pattern to match has. */
  constructor(depth: number) {
    this.#depth = depth;
    this.starts = new Int32Array(depth + 1);
    this.ends = new Int32Array(depth + 1);
  }

  /** Cuts a path; returns this. */
  cut(path: string): this {
    this.path = path;
    this.rooted = path.charCodeAt(0) === 47;
    if (!this.rooted) return this;
    const q = path.indexOf('?');
    let end = q < 0 ? path.length : q;
    this.queryAt = end;
    if (end > 1 && path.charCodeAt(end - 1) === 47) end--;
    this.end = end;
    let pos = 1;
    for (let i = 0; i <= this.#depth; i++) {
      this.starts[i] = pos;
      // Past the end: no pattern reads further (each stops at the first segment starting past the end).
      if (pos > end) break;
      let slash = path.indexOf('/', pos);
      if (slash < 0 || slash > end) slash = end;
      this.ends[i] = slash;
      pos = slash + 1;
    }
    return this;
  }
}

/**
 * Matches a cut path against a pattern's segments, and fills `out` with the `:name` captures when given (only
 * read when the whole path matches).
 */
function walk(
  segments: readonly Segment[],
  cut: PathSegments,
  includePrefix: boolean,
  out: Record<string, string> | undefined,
): boolean {
  if (!cut.rooted) return false;
  if (segments.length === 0) return cut.queryAt === 1;
  const path = cut.path;
  const end = cut.end;
  const starts = cut.starts;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    const pos = starts[i];
    if (seg.kind === Kind.Rest) {
      // One or more segments remain, or (includePrefix) the path ends with the prefix: past its end, or the root.
      if (pos < end) return path.charCodeAt(pos) !== 47;
      return includePrefix && (pos > end || end === 1);
    }
    if (pos > end) return false;
    const len = cut.ends[i] - pos;
    if (len === 0) return false;
    if (seg.kind === Kind.Literal) {
      if (len !== seg.text.length || !equalsLower(path, pos, seg.text)) return false;
    } else if (seg.kind === Kind.ExactLiteral) {
      if (len !== seg.text.length || !path.startsWith(seg.text, pos)) return false;
    } else if (seg.kind === Kind.Param && out !== undefined) {
      out[seg.text] = path.slice(pos, cut.ends[i]);
    }
  }
  return starts[segments.length] > end;
}

/** ASCII case-insensitive comparison of `path[pos..]` with a lower-case literal, without allocating. */
function equalsLower(path: string, pos: number, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) {
    let c = path.charCodeAt(pos + i);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== lower.charCodeAt(i)) return false;
  }
  return true;
}

/** A method and path pattern: `GET /health` or `/metrics` (any method). */
export interface EndpointPattern {
  /** Upper-case methods; empty means any. `GET` also matches `HEAD`, as routers do. */
  readonly methods: readonly string[];
  readonly pattern: PathPattern;
  /** True when method and path match. */
  match(method: string, path: string): boolean;
  /** {@link EndpointPattern.match} on a path already cut (see {@link PathPattern.matchSegments}). */
  matchSegments(method: string, segments: PathSegments): boolean;
}

/**
 * Compiles an endpoint such as `GET /health`, `GET,HEAD /ready` or `/.well-known/*`, as exemptions use it: a
 * trailing `/*` does not match its prefix (`/.well-known`, `/.well-known/`) and literal segments match in their
 * own case only (`/.WELL-KNOWN/x` is not exempt), see {@link PathPatternOptions}.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` for an invalid method list or pattern.
 */
export function compileEndpoint(text: string, option = 'endpoint'): EndpointPattern {
  if (typeof text !== 'string') throw invalidOption(option, 'a string such as "GET /health"', text);
  const trimmed = text.trim();
  const space = trimmed.indexOf(' ');
  const methods = space < 0 ? [] : parseMethods(trimmed.slice(0, space), option);
  const source = space < 0 ? trimmed : trimmed.slice(space + 1).trim();
  return endpoint(methods, compilePathPattern(source, option, { includePrefix: false, caseSensitive: true }));
}

/**
 * Builds an endpoint from methods and a compiled pattern.
 */
export function endpoint(methods: readonly string[], pattern: PathPattern): EndpointPattern {
  const set = new Set(methods);
  if (set.has('GET')) set.add('HEAD');
  const any = set.size === 0;
  // The path first: most requests fail it at its first segment, before any method lookup.
  return Object.freeze({
    methods: Object.freeze([...set]),
    pattern,
    match: (method: string, path: string) => pattern.match(path) && (any || hasMethod(set, method)),
    matchSegments: (method: string, segments: PathSegments) =>
      pattern.matchSegments(segments) && (any || hasMethod(set, method)),
  });
}

/** Set membership of a method, upper-casing only a method that is not upper case already (rare). */
export function hasMethod(set: ReadonlySet<string>, method: string): boolean {
  if (set.has(method)) return true;
  for (let i = 0; i < method.length; i++) {
    const c = method.charCodeAt(i);
    if (c >= 97 && c <= 122) return set.has(method.toUpperCase());
  }
  return false;
}

/**
 * Parses a method list (`GET`, `GET,POST`, or an array).
 *
 * @throws SluiceError `ERR_INVALID_OPTION` for an empty list or a method that is not an HTTP token.
 */
export function parseMethods(given: string | readonly string[], option: string): string[] {
  const list = typeof given === 'string' ? given.split(',') : given;
  if (!Array.isArray(list) || list.length === 0)
    throw invalidOption(option, 'one or more HTTP methods', given);
  return list.map((m: unknown) => {
    const s = typeof m === 'string' ? m.trim().toUpperCase() : '';
    if (!/^[A-Z]+$/.test(s)) throw invalidOption(option, 'HTTP methods such as GET or POST', m);
    return s;
  });
}
