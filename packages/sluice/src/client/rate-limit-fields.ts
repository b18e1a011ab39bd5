import {
  type BareItem,
  type Item,
  type List,
  type Parameters,
  parseItem,
  parseList,
  Token,
} from 'structured-headers';

/** One quota policy of a `RateLimit-Policy` field (draft-ietf-httpapi-ratelimit-headers-11). */
export interface QuotaPolicyItem {
  /** The policy's name, the Item's String or Token value. */
  readonly name: string;
  /** `q`: quota units allocated per window. */
  readonly quota: number;
  /** `w`: the window in seconds, when given. */
  readonly windowSeconds: number | undefined;
  /** `qu`: the quota unit (`requests`, `content-bytes`, `concurrent-requests`); the draft's default is `requests`. */
  readonly quotaUnit: string;
  /** `pk`: the partition key, base64 of its bytes, when given. */
  readonly partitionKey: string | undefined;
}

/** The live state of one policy from a `RateLimit` field (draft-11). */
export interface QuotaStateItem {
  /** The policy's name; it matches a name in `RateLimit-Policy`. */
  readonly name: string;
  /** `r`: quota units remaining. */
  readonly remaining: number;
  /** `t`: seconds until the quota resets, when given. */
  readonly resetSeconds: number | undefined;
  /** `pk`: the partition key, base64 of its bytes, when given. */
  readonly partitionKey: string | undefined;
}

/**
 * Parses a `RateLimit-Policy` field value: a Structured Fields List of quota policies such as
 * `"burst";q=100;w=60, "daily";q=1000;w=86400`.
 *
 * Following the draft and RFC 9651, a value that does not parse as a List is ignored whole, and a member that is
 * not a named Item with a non-negative Integer `q` is ignored alone; unknown parameters are ignored. Never throws.
 *
 * @param value - the combined field value (fetch joins repeated fields with `, `), or `null` when absent.
 * @returns the valid policies in field order; a later member with the same name replaces an earlier one.
 */
export function parseRateLimitPolicy(value: string | null | undefined): QuotaPolicyItem[] {
  const out = new Map<string, QuotaPolicyItem>();
  for (const [bare, params] of items(value)) {
    const name = nameOf(bare);
    const quota = nonNegativeInteger(params.get('q'));
    if (name === undefined || quota === undefined) continue;
    const w = params.get('w');
    const windowSeconds = positiveInteger(w);
    // A `w` that is present but not a positive Integer makes the member malformed rather than windowless.
    if (w !== undefined && windowSeconds === undefined) continue;
    const qu = params.get('qu');
    out.set(name, {
      name,
      quota,
      windowSeconds,
      quotaUnit: typeof qu === 'string' || qu instanceof Token ? String(qu) : 'requests',
      partitionKey: partitionKeyOf(params),
    });
  }
  return [...out.values()];
}

/**
 * Parses a `RateLimit` field value: a Structured Fields List such as `"burst";r=17;t=42, "daily";r=870;t=3600`.
 *
 * A value that does not parse is ignored whole; a member without a non-negative Integer `r`, or with a `t` that is
 * not one, is ignored alone. Never throws.
 *
 * @param value - the combined field value, or `null` when absent.
 * @returns the valid states in field order; a later member with the same name replaces an earlier one.
 */
export function parseRateLimit(value: string | null | undefined): QuotaStateItem[] {
  const out = new Map<string, QuotaStateItem>();
  for (const [bare, params] of items(value)) {
    const name = nameOf(bare);
    const remaining = nonNegativeInteger(params.get('r'));
    if (name === undefined || remaining === undefined) continue;
    const t = params.get('t');
    const resetSeconds = nonNegativeInteger(t);
    if (t !== undefined && resetSeconds === undefined) continue;
    out.set(name, { name, remaining, resetSeconds, partitionKey: partitionKeyOf(params) });
  }
  return [...out.values()];
}

/** The legacy single-policy fields of drafts 00 to 06: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`. */
export interface LegacyFields {
  readonly quota: number | undefined;
  readonly windowSeconds: number | undefined;
  readonly remaining: number | undefined;
  readonly resetSeconds: number | undefined;
}

/**
 * Parses the pre-draft-07 fields. `RateLimit-Limit` may carry policies after the limit (`100, 100;w=60`), which
 * give the window. Each field is parsed alone, so one malformed field loses only its own value. Never throws.
 *
 * @returns the values found, each `undefined` when absent or malformed; `undefined` when none is present.
 */
export function parseLegacyRateLimit(
  limit: string | null | undefined,
  remaining: string | null | undefined,
  reset: string | null | undefined,
): LegacyFields | undefined {
  let quota: number | undefined;
  let windowSeconds: number | undefined;
  const members = items(limit);
  if (members.length > 0) {
    quota = nonNegativeInteger(members[0][0]);
    for (const [bare, params] of members) {
      if (quota !== undefined && bare === quota && positiveInteger(params.get('w')) !== undefined) {
        windowSeconds = params.get('w') as number;
        break;
      }
    }
  }
  const fields: LegacyFields = {
    quota,
    windowSeconds,
    remaining: integerItem(remaining),
    resetSeconds: integerItem(reset),
  };
  return fields.quota === undefined && fields.remaining === undefined && fields.resetSeconds === undefined
    ? undefined
    : fields;
}

const PLAIN_NUMBER = /^\d{1,16}(?:\.\d{1,9})?$/;

/** The `X-RateLimit-*` fields: not Structured Fields, so read as plain numbers. */
export interface XRateLimitFields {
  readonly quota: number | undefined;
  readonly remaining: number | undefined;
  /** Seconds until reset after converting an epoch form; see {@link parseXRateLimit}. */
  readonly resetSeconds: number | undefined;
  /** `X-RateLimit-Policy` (the contract's tier name, for example `standard`), when given. */
  readonly policy: string | undefined;
}

/**
 * Parses `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` and `X-RateLimit-Policy`.
 *
 * `X-RateLimit-Reset` has no standard: GitHub and the contract send epoch seconds, others delta seconds or epoch
 * milliseconds. A value of at least 10^12 is read as epoch milliseconds, at least 10^9 (September 2001) as epoch
 * seconds, anything smaller as seconds from now. Never throws.
 *
 * @param nowMs - wall-clock time for the epoch forms: the response's `Date` when present, else the local clock.
 * @returns the values found, or `undefined` when none is present and valid.
 */
export function parseXRateLimit(
  get: (name: string) => string | null,
  nowMs: number,
): XRateLimitFields | undefined {
  const quota = plainInteger(get('x-ratelimit-limit'));
  const remaining = plainInteger(get('x-ratelimit-remaining'));
  let resetSeconds: number | undefined;
  const resetText = get('x-ratelimit-reset')?.trim();
  if (resetText !== undefined && PLAIN_NUMBER.test(resetText)) {
    const n = Number(resetText);
    if (n >= 1e12) resetSeconds = Math.max(0, Math.ceil((n - nowMs) / 1000));
    else if (n >= 1e9) resetSeconds = Math.max(0, Math.ceil(n - nowMs / 1000));
    else resetSeconds = Math.ceil(n);
  }
  if (quota === undefined && remaining === undefined && resetSeconds === undefined) return undefined;
  const policyText = get('x-ratelimit-policy')?.trim();
  const policy =
    policyText !== undefined && policyText.length > 0 && policyText.length <= 128 ? policyText : undefined;
  return { quota, remaining, resetSeconds, policy };
}

function items(value: string | null | undefined): Item[] {
  if (value === null || value === undefined || value.length === 0) return [];
  let list: List;
  try {
    list = parseList(value);
  } catch {
    // RFC 9651 section 4.2: a field that fails to parse is ignored as a whole.
    return [];
  }
  // Inner Lists have no meaning in these fields.
  return list.filter((m): m is Item => !Array.isArray(m[0]));
}

function integerItem(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  try {
    return nonNegativeInteger(parseItem(value)[0]);
  } catch {
    return undefined;
  }
}

function plainInteger(value: string | null): number | undefined {
  const text = value?.trim();
  if (text === undefined || !/^\d{1,15}$/.test(text)) return undefined;
  return Number(text);
}

function nameOf(bare: BareItem): string | undefined {
  if (typeof bare === 'string') return bare;
  if (bare instanceof Token) return bare.toString();
  return undefined;
}

function nonNegativeInteger(value: BareItem | undefined): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

function positiveInteger(value: BareItem | undefined): number | undefined {
  const n = nonNegativeInteger(value);
  return n !== undefined && n > 0 ? n : undefined;
}

function partitionKeyOf(params: Parameters): string | undefined {
  const pk = params.get('pk');
  if (pk instanceof ArrayBuffer) {
    let binary = '';
    for (const byte of new Uint8Array(pk)) binary += String.fromCharCode(byte);
    return btoa(binary);
  }
  return typeof pk === 'string' ? pk : undefined;
}
