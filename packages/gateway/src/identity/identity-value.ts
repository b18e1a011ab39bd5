/**
 * The most characters an identity header value may hold (as received, a byte each; spaces around it do not
 * count), and the most UTF-8 bytes an identity claim may: identity values become bucket keys, and a longer one is
 * refused rather than dropped.
 */
export const MAX_IDENTITY_LENGTH = 256;

/** Why an identity claim of a verified token names no caller. */
export type ClaimFault = 'control' | 'too_long' | 'empty' | 'list' | 'not_an_id';

/** An identity claim no id can hold, as {@link claimValue} finds it. */
export interface InvalidClaim {
  /** The claim, as configured (`tenant_id`). */
  readonly claim: string;
  /**
   * `control`: a control or bidirectional character; `too_long`: more than {@link MAX_IDENTITY_LENGTH} UTF-8
   * bytes; `empty`: nothing but spaces; `list`: an array; `not_an_id`: an object or a boolean.
   */
  readonly fault: ClaimFault;
}

/**
 * C0 and C1 controls, DEL and the bidirectional controls: never part of an id (keys are printed and logged).
 *
 * @param c - a UTF-16 code unit.
 */
export function isControl(c: number): boolean {
  return (
    c < 0x20 ||
    (c >= 0x7f && c <= 0x9f) ||
    c === 0x061c ||
    c === 0x200e ||
    c === 0x200f ||
    (c >= 0x202a && c <= 0x202e) ||
    (c >= 0x2066 && c <= 0x2069)
  );
}

/**
 * An identity claim of a verified token, checked as an identity header value is: spaces around it trimmed, a
 * number read as its decimal text, refused when it holds a control character, is longer than
 * {@link MAX_IDENTITY_LENGTH} UTF-8 bytes, is empty, is a list or is no id at all. A refused claim is never read as
 * absent: the request would be keyed by its address, outside its tenant's blocks.
 *
 * @param payload - the token's verified claims.
 * @param name - the claim, as configured.
 * @returns the id, `undefined` when the claim is absent (or `null`), or what is wrong with it.
 */
export function claimValue(
  payload: Readonly<Record<string, unknown>>,
  name: string,
): string | undefined | InvalidClaim {
  const v = payload[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : { claim: name, fault: 'not_an_id' };
  if (Array.isArray(v)) return { claim: name, fault: 'list' };
  if (typeof v !== 'string') return { claim: name, fault: 'not_an_id' };
  const t = v.trim();
  if (t === '') return { claim: name, fault: 'empty' };
  if (Buffer.byteLength(t, 'utf8') > MAX_IDENTITY_LENGTH) return { claim: name, fault: 'too_long' };
  for (let i = 0; i < t.length; i++) if (isControl(t.charCodeAt(i))) return { claim: name, fault: 'control' };
  return t;
}
