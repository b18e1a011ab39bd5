import { invalidOption } from './options.js';

/** Longest reason accepted: reasons are stored, listed and logged, never unbounded. */
export const MAX_OVERRIDE_REASON = 500;

/**
 * Whether a UTF-16 code unit may not stand in a reason: C0 and C1 control characters (line breaks and tabs
 * included), DEL, and the bidirectional embeddings, overrides and isolates. Reasons are printed by `sluice block
 * list` and `sluice override history` and written to audit lines, where an escape sequence could rewrite the
 * terminal and a line break or a right-to-left override could show a row that was never set.
 */
function controlCode(code: number): boolean {
  return (
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069)
  );
}

/**
 * Checks an override's reason: a non-empty text of at most {@link MAX_OVERRIDE_REASON} characters, on one line,
 * without control or bidirectional control characters.
 *
 * @param value - the reason as given.
 * @param option - the field named in the error (`reason`).
 * @returns the reason without outer white space.
 * @throws SluiceError `ERR_INVALID_OPTION` naming the field, the character found (as `U+XXXX`) and its position.
 */
export function checkOverrideReason(value: unknown, option = 'reason'): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_OVERRIDE_REASON) {
    throw invalidOption(option, `a non-empty text of at most ${MAX_OVERRIDE_REASON} characters`, value);
  }
  const text = value.trim();
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (!controlCode(code)) continue;
    const name = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
    throw invalidOption(
      option,
      `one line of text without control characters (line breaks, tabs, escapes, bidirectional controls); ${name} at character ${i + 1}`,
      value,
    );
  }
  return text;
}
