import { type Decision, invalidOption, type Policy, SingleDecision } from '../core/index.js';
import { mostRestrictive, resetEpochSeconds } from './rate-limit-headers.js';

/** The media type of RFC 9457 problem details. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Stable `code` values of the problem bodies this layer writes. */
export const ProblemCode = Object.freeze({
  /** A policy lacked the tokens (429). */
  RateLimited: 'rate_limited',
  /** The store could not decide and the failure mode is closed (503). */
  Unavailable: 'rate_limiter_unavailable',
  /** The request costs more than a policy's burst: no wait can admit it (429, without `Retry-After`). */
  CostExceedsBurst: 'cost_exceeds_burst',
});

/** The RFC 9457 body of a rate-limit denial, with its extension members. */
export interface RateLimitProblem {
  readonly type: string;
  readonly title: string;
  readonly status: 429 | 503;
  readonly detail: string;
  /** The request path (without query string). */
  readonly instance: string;
  readonly code: string;
  /** Quota per window of the most restrictive violated policy. */
  readonly limit?: number;
  readonly remaining?: number;
  /** Epoch second at which that policy's bucket is full again. */
  readonly reset?: number;
  /**
   * Seconds, as in `Retry-After`. Absent for `cost_exceeds_burst`: no wait can admit such a request, so there is
   * no advice to give (nor a `Retry-After` header).
   */
  readonly retryAfter?: number;
  readonly 'violated-policies': readonly string[];
  readonly correlation_id: string;
}

/**
 * Validates the problem type base URI option and returns the function that builds a type URI from a slug. With
 * no base the type is `about:blank` (RFC 9457, 4.2.1), which is why the default title then is the status phrase.
 *
 * @param base - an absolute URI such as `https://errors.example.com/problems/`, or `undefined`.
 * @throws SluiceError `ERR_INVALID_OPTION` when the base is not an absolute URI.
 */
export function problemTypeResolver(base: unknown): ((slug: string) => string) | undefined {
  if (base === undefined) return undefined;
  if (typeof base !== 'string' || !URL.canParse(base)) {
    throw invalidOption(
      'problemTypeBase',
      'an absolute URI such as "https://errors.example.com/problems/"',
      base,
    );
  }
  const joined = base.endsWith('/') || base.endsWith('#') ? base : `${base}/`;
  return (slug) => `${joined}${slug}`;
}

/** "minute" for 60, "hour" for 3600, and so on; otherwise "N seconds". */
export function windowPhrase(seconds: number): string {
  switch (seconds) {
    case 1:
      return 'second';
    case 60:
      return 'minute';
    case 3600:
      return 'hour';
    case 86400:
      return 'day';
    default:
      return `${seconds} seconds`;
  }
}

/**
 * The detail sentence of a denial up to and including `retry in `: the violated policy by name with what it
 * allows (a burst, refilled at the quota per window). Naming the burst matters: with a burst below the quota a
 * client is refused long before it has sent "the quota" in a window, and a sentence quoting only the quota would
 * tell it something the server does not do.
 */
function deniedDetailPrefix(p: Policy): string {
  const unit = p.burst === 1 ? 'request' : 'requests';
  // A concurrency policy's bucket never refills by time: its slots come back as responses end.
  if (p.concurrent > 0) {
    return `Concurrency limit "${p.name}" reached: at most ${p.concurrent} ${unit} in flight at once; retry in `;
  }
  return `Rate limit "${p.name}" exceeded: bursts of up to ${p.burst} ${unit}, refilled at ${p.quota} per ${windowPhrase(p.window)}; retry in `;
}

/** Inputs of {@link rateLimitProblem}. */
export interface ProblemInput {
  /** The denying decision. */
  readonly decision: Decision;
  /** The request path; a query string is cut off (it may carry secrets and is not the resource). */
  readonly path: string;
  /** From {@link correlationIdOf}. */
  readonly correlationId: string;
  /** Wall-clock milliseconds for `reset`; default `Date.now()`. */
  readonly nowMs?: number;
  /** From {@link problemTypeResolver}; `undefined` gives `about:blank`. */
  readonly typeOf?: (slug: string) => string;
  /** The `code` of a 429, when the rule sets its own (`ERR_POL_007`); default `rate_limited`. */
  readonly code?: string;
}

/**
 * Builds the RFC 9457 problem of a denial: 429 `rate_limited` for a limited decision, 503
 * `rate_limiter_unavailable` when the store could not decide. The body names policies and numbers only, never the
 * bucket key, so it leaks neither the client's address nor whether a resource exists.
 *
 * @returns the problem object; `JSON.stringify` it for the body (see {@link rateLimitProblemBody}).
 *
 * @example
 * ```ts
 * rateLimitProblem({ decision, path: '/api/risk/simulation', correlationId: 'abc' }).detail;
 * // 'Rate limit "standard" exceeded: bursts of up to 50 requests, refilled at 300 per minute; retry in 1 s.'
 * ```
 */
export function rateLimitProblem(input: ProblemInput): RateLimitProblem {
  const { decision, correlationId, typeOf } = input;
  const q = input.path.indexOf('?');
  const instance = q < 0 ? input.path : input.path.slice(0, q);
  const retryAfter = Math.max(1, decision.retryAfterSeconds);
  if (decision.reason === 'store_unavailable') {
    return {
      type: typeOf ? typeOf('rate-limiter-unavailable') : 'about:blank',
      title: typeOf ? 'Rate Limiter Unavailable' : 'Service Unavailable',
      status: 503,
      detail: 'The rate limiter cannot decide right now; try again shortly.',
      instance,
      code: ProblemCode.Unavailable,
      retryAfter,
      'violated-policies': [],
      correlation_id: correlationId,
    };
  }
  const o = mostRestrictive(decision);
  const p = o?.policy;
  let detail = `Rate limit exceeded; retry in ${retryAfter} s.`;
  if (p !== undefined) {
    detail =
      decision.reason === 'cost_exceeds_burst'
        ? `This request costs ${decision.cost} tokens, more than the burst of ${p.burst} that policy "${p.name}" allows.`
        : `${deniedDetailPrefix(p)}${retryAfter} s.`;
  }
  const violated: string[] = [];
  for (const v of decision.violated) violated.push(v.policy.name);
  return {
    type: typeOf ? typeOf('rate-limit-exceeded') : 'about:blank',
    title: typeOf ? 'Rate Limit Exceeded' : 'Too Many Requests',
    status: 429,
    detail,
    instance,
    code:
      decision.reason === 'cost_exceeds_burst'
        ? ProblemCode.CostExceedsBurst
        : (input.code ?? ProblemCode.RateLimited),
    limit: p?.quota,
    remaining: o?.remaining,
    reset: o === undefined ? undefined : resetEpochSeconds(input.nowMs ?? Date.now(), o.resetSeconds),
    retryAfter: decision.reason === 'cost_exceeds_burst' ? undefined : retryAfter,
    'violated-policies': violated,
    correlation_id: correlationId,
  };
}

/** The constant parts of a one-policy 429 body, serialized once per policy and problem type resolver. */
interface BodyTemplate {
  readonly typeOf: ((slug: string) => string) | undefined;
  readonly code: string;
  /** Up to and including the detail's `retry in ` (the opening quote of the detail string is in it). */
  readonly head: string;
  /** From `,"code"` up to and including `"remaining":`. */
  readonly middle: string;
  /** From `,"violated-policies"` up to and including `"correlation_id":`. */
  readonly tail: string;
  /** UTF-8 bytes of `head`, `middle` and `tail` (a policy name or type URI may be beyond ASCII). */
  readonly headBytes: number;
  readonly middleBytes: number;
  readonly tailBytes: number;
  /** The wait of the last body, and its two parts: a flood of denials mostly repeats one wait. */
  retry: number;
  /** `head`, the wait, and up to `"instance":`. */
  lead: string;
  /** From `,"retryAfter":` (the wait) up to and including `"correlation_id":`. */
  trail: string;
  /** `lead` and the `instance` member of the last body (kept while the wait and the path repeat), its bytes. */
  front: string;
  frontInstance: string;
  frontBytes: number;
  /**
   * From `,"code"` up to and including `"correlation_id":` of the last body (kept while its numbers and the wait
   * repeat), with its bytes: a flood of denials of one key repeats `remaining` and `reset` within a second.
   */
  back: string;
  backRemaining: number;
  backReset: number;
  backBytes: number;
  /** `front` and `back` joined (kept while both are), so a denial only appends its correlation id. */
  both: string;
}

const templates = new WeakMap<object, BodyTemplate>();
/**
 * The policy of the last body and its template: a flood of denials asks for one, and skips the map. It holds that
 * one policy until a body of another is built (the map alone would let it go with its limiter).
 */
let lastPolicy: Policy | undefined;
let lastTemplate: BodyTemplate | undefined;

function templateOf(p: Policy, typeOf: ((slug: string) => string) | undefined, code: string): BodyTemplate {
  const last = lastTemplate;
  if (p === lastPolicy && last !== undefined && last.typeOf === typeOf && last.code === code) return last;
  const t = templateFor(p, typeOf, code);
  lastPolicy = p;
  lastTemplate = t;
  return t;
}

function templateFor(p: Policy, typeOf: ((slug: string) => string) | undefined, code: string): BodyTemplate {
  const known = templates.get(p);
  if (known !== undefined && known.typeOf === typeOf && known.code === code) return known;
  const type = typeOf ? JSON.stringify(typeOf('rate-limit-exceeded')) : '"about:blank"';
  const title = typeOf ? '"Rate Limit Exceeded"' : '"Too Many Requests"';
  // The serialized prefix without its closing quote: the seconds and ` s."` follow per denial.
  const detail = JSON.stringify(deniedDetailPrefix(p)).slice(0, -1);
  const head = `{"type":${type},"title":${title},"status":429,"detail":${detail}`;
  const middle = `,"code":${JSON.stringify(code)},"limit":${p.quota},"remaining":`;
  const tail = `,"violated-policies":${JSON.stringify([p.name])},"correlation_id":`;
  const t: BodyTemplate = {
    typeOf,
    code,
    head,
    middle,
    tail,
    headBytes: Buffer.byteLength(head),
    middleBytes: Buffer.byteLength(middle),
    tailBytes: Buffer.byteLength(tail),
    retry: 0,
    lead: '',
    trail: '',
    front: '',
    frontInstance: '',
    frontBytes: 0,
    back: '',
    backRemaining: Number.NaN,
    backReset: Number.NaN,
    backBytes: 0,
    both: '',
  };
  // One entry per policy: a second HTTP limiter with another type base over the same policy replaces it.
  templates.set(p, t);
  return t;
}

/**
 * A string as a JSON string literal, byte for byte what `JSON.stringify` gives: printable ASCII other than the
 * quote and the backslash needs no escape (generated correlation ids and most paths), so only other strings pay
 * for the serializer.
 */
function jsonString(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return JSON.stringify(s);
  }
  return `"${s}"`;
}

/** The last request target and its `instance` member (with its UTF-8 bytes): a flood of denials mostly hits one path. */
let lastPath = '/';
let lastInstance = '"/"';
let lastInstanceBytes = 3;

function instanceOf(path: string): string {
  if (path === lastPath) return lastInstance;
  const q = path.indexOf('?');
  const instance = jsonString(q < 0 ? path : path.slice(0, q));
  lastPath = path;
  lastInstance = instance;
  lastInstanceBytes = asciiOnly(instance) ? instance.length : Buffer.byteLength(instance);
  return instance;
}

/** Whether every character is ASCII, so that the UTF-8 bytes are the length. */
function asciiOnly(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** The last body of the template path and its UTF-8 bytes, for {@link problemBodyBytes}. */
let lastBody = '';
let lastBodyBytes = 0;

/**
 * The UTF-8 bytes of a denial body, for its `Content-Length`. The body just built by
 * {@link rateLimitProblemBodyOf} (what an adapter sends next, on the synchronous path) is counted from its
 * parts, which spares `Buffer.byteLength` flattening it into a copy the socket write makes again; any other body
 * is measured. Only a body of equal content compares equal, so the answer is right for every string.
 *
 * @param body - the body to send.
 */
export function problemBodyBytes(body: string): number {
  return body === lastBody ? lastBodyBytes : Buffer.byteLength(body);
}

/**
 * {@link rateLimitProblem} serialized as the response body, byte for byte what `JSON.stringify` gives (a test
 * holds it to that), but assembled from a template cached per policy: everything but the path, the numbers and
 * the correlation id is constant, so a flood of denials does not pay for building and stringifying an object.
 * The parts around the wait are kept per template for the last wait, the `instance` member for the last path.
 */
export function rateLimitProblemBody(input: ProblemInput): string {
  return rateLimitProblemBodyOf(input, false);
}

/**
 * {@link rateLimitProblemBody}, told whether the correlation id is one of `correlationIdOf`'s (a valid
 * request id or a generated one: letters, digits and `. _ - : / + = @` only), which goes into the body quoted as
 * it is, without a scan per denial. An id the caller set on the request is scanned as any string.
 *
 * @param input - as for {@link rateLimitProblemBody}.
 * @param checkedId - true when `input.correlationId` comes from `correlationIdOf`.
 */
export function rateLimitProblemBodyOf(input: ProblemInput, checkedId: boolean): string {
  const d = input.decision;
  let policy: Policy;
  let remaining: number;
  let resetSeconds: number;
  // A one-policy decision of the store is read through its fields: its outcome list is built only when read.
  if (d instanceof SingleDecision) {
    if (d.allowed || d.reason === 'cost_exceeds_burst') return JSON.stringify(rateLimitProblem(input));
    policy = d.policy;
    remaining = d.remaining;
    resetSeconds = d.resetSeconds;
  } else {
    if (d.reason === 'store_unavailable' || d.reason === 'cost_exceeds_burst' || d.violated.length !== 1) {
      return JSON.stringify(rateLimitProblem(input));
    }
    const o = d.violated[0];
    policy = o.policy;
    remaining = o.remaining;
    resetSeconds = o.resetSeconds;
  }
  const t = templateOf(policy, input.typeOf, input.code ?? ProblemCode.RateLimited);
  const retryAfter = Math.max(d.retryAfterSeconds, 1);
  if (t.retry !== retryAfter) {
    t.lead = `${t.head}${retryAfter} s.","instance":`;
    t.trail = `,"retryAfter":${retryAfter}${t.tail}`;
    t.retry = retryAfter;
    // Both halves hold the wait: neither is kept.
    t.frontInstance = '';
    t.backRemaining = Number.NaN;
  }
  const instance = instanceOf(input.path);
  let joined = false;
  if (t.frontInstance !== instance) {
    t.front = `${t.lead}${instance}`;
    t.frontInstance = instance;
    // The wait and its fixed text around it are ASCII.
    t.frontBytes = t.headBytes + t.lead.length - t.head.length + lastInstanceBytes;
    joined = true;
  }
  const reset = resetEpochSeconds(input.nowMs ?? Date.now(), resetSeconds);
  if (t.backRemaining !== remaining || t.backReset !== reset) {
    t.back = `${t.middle}${remaining},"reset":${reset}${t.trail}`;
    t.backRemaining = remaining;
    t.backReset = reset;
    // Everything but the middle and the tail is digits and ASCII punctuation.
    t.backBytes = t.back.length - t.middle.length - t.tail.length + t.middleBytes + t.tailBytes;
    joined = true;
  }
  if (joined) t.both = `${t.front}${t.back}`;
  const cid = input.correlationId;
  let body: string;
  let idBytes: number;
  if (checkedId) {
    // A checked id is ASCII (letters, digits and a few marks) and needs no escape.
    body = `${t.both}"${cid}"}`;
    idBytes = cid.length + 2;
  } else {
    const id = jsonString(cid);
    body = `${t.both}${id}}`;
    idBytes = Buffer.byteLength(id);
  }
  lastBody = body;
  lastBodyBytes = t.frontBytes + t.backBytes + idBytes + 1;
  return body;
}
