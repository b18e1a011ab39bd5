import { printable } from '../replay/report-text.js';

/**
 * An answer that is not the admin API's: a server reached at the wrong address (the proxy listener answers the
 * upstream's JSON). Told apart from a server that does not answer, since the fix is another URL, not a restart.
 */
export class NotAdminAnswer extends Error {}

/**
 * A 401 from the admin API: the command did send `Authorization: Bearer <SLUICE_ADMIN_TOKEN>`, so the token is
 * the wrong one, whatever the answer's own text (written for clients that sent none) says.
 */
export class TokenRefused extends Error {}

/** The JSON object of an answer, or {@link NotAdminAnswer}. */
export function adminJson(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new NotAdminAnswer('its answer is not JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new NotAdminAnswer('its answer is not a JSON object');
  return v as Record<string, unknown>;
}

/** The list an admin answer carries under `name`, or {@link NotAdminAnswer}. */
export function listOf<T>(reply: Record<string, unknown>, name: string): T[] {
  const list = reply[name];
  if (!Array.isArray(list)) throw new NotAdminAnswer(`no "${name}" list in its answer`);
  return list as T[];
}

/** The id of the rule a `set` answer carries, or {@link NotAdminAnswer}. */
export function idOf(rule: unknown): string {
  const id = (rule as { id?: unknown } | null | undefined)?.id;
  if (typeof id !== 'string') throw new NotAdminAnswer('no "override" with an id in its answer');
  return printable(id);
}
