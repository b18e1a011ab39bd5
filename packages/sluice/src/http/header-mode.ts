import { invalidOption } from '../core/index.js';

/**
 * Which rate-limit headers a response carries:
 * - `draft-11`: `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-11);
 * - `legacy`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset`, `X-RateLimit-Policy`;
 * - `both`: all of them;
 * - `none`: no rate-limit headers (a 429 still carries `Retry-After` and its problem body).
 */
export type HeaderMode = 'draft-11' | 'legacy' | 'both' | 'none';

const MODES: readonly HeaderMode[] = ['draft-11', 'legacy', 'both', 'none'];

/**
 * Validates a header mode option.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` for anything but the four modes.
 */
export function headerModeOption(option: string, value: unknown, fallback: HeaderMode): HeaderMode {
  if (value === undefined) return fallback;
  if (!MODES.includes(value as HeaderMode)) throw invalidOption(option, `one of ${MODES.join(', ')}`, value);
  return value as HeaderMode;
}
