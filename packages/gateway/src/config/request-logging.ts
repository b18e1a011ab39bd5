import type { SemanticIssue } from './semantic-issue.js';

/**
 * Which requests get a line in the request log (`logging.requests`), whatever the level of the other lines:
 * `all`, `denied` (every request the gateway did not serve as asked: denials, blocks, sheds, refusals, errors,
 * upstream failures), `none`, or `sample`: every denied request and `share` of the others, spread evenly.
 */
export interface RequestLogging {
  readonly mode: 'all' | 'denied' | 'none' | 'sample';
  /** The share of the requests served as asked that get a line: 1 for `all`, 0 for `denied` and `none`. */
  readonly share: number;
}

/** The finest share the sampler keeps exactly: it counts in millionths. */
export const REQUEST_SHARE_STEP = 1e-6;

const ALL: RequestLogging = Object.freeze({ mode: 'all', share: 1 });
const DENIED: RequestLogging = Object.freeze({ mode: 'denied', share: 0 });
const NONE: RequestLogging = Object.freeze({ mode: 'none', share: 0 });

/** Levels at which pino wrote request lines before `logging.requests` existed (they were `info` lines). */
const REQUEST_LINE_LEVELS = new Set(['info', 'debug', 'trace']);

/**
 * Resolves `logging.requests`. Without it, request lines follow the level as they did before the setting: every
 * request at `info` or finer, none at `warn` and above, so an existing configuration logs what it logged.
 *
 * @param value - the schema-valid value: `all`, `denied`, `none` or a percentage such as `5%`.
 * @param level - `logging.level` as resolved.
 * @param issues - where a share out of range is reported.
 */
export function resolveRequestLogging(
  value: string | undefined,
  level: string,
  issues: SemanticIssue[],
): RequestLogging {
  if (value === undefined) return REQUEST_LINE_LEVELS.has(level) ? ALL : NONE;
  if (value === 'all') return ALL;
  if (value === 'denied') return DENIED;
  if (value === 'none') return NONE;
  const share = Number(value.slice(0, -1)) / 100;
  if (!(Math.round(share / REQUEST_SHARE_STEP) >= 1) || share > 1) {
    issues.push({
      path: ['logging', 'requests'],
      message:
        'must be a share above 0% and at most 100%, in steps of 0.0001% (use none for no request lines, ' +
        `denied for denials only), got "${value}"`,
    });
    return NONE;
  }
  return share === 1 ? ALL : Object.freeze({ mode: 'sample', share });
}
