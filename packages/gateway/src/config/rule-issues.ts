import { isReservedName, reservedNameMessage } from './reserved-names.js';
import type { SemanticIssue } from './semantic-issue.js';
import type { ConfigPath } from './violation.js';

// The checks of an endpoint rule (and a class) that the schema cannot express: its policy name, its pattern and
// its sizes. Each pushes a SemanticIssue with the rule's path, so validate, start and reload report it alike.

/**
 * A policy name is sent in rate-limit headers: the HTTP limiter refuses at construction what a header value
 * cannot carry unchanged, and a rule's name reaches it unchanged, so the same rule applies here with the line.
 */
export function policyNameIssue(name: string, path: ConfigPath, issues: SemanticIssue[]): void {
  if (isReservedName(name)) issues.push({ path, message: reservedNameMessage(name) });
  else if (!/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(name)) {
    issues.push({
      path,
      message: `must be printable ASCII without leading or trailing spaces (the policy name is sent in rate-limit headers), got ${JSON.stringify(name)}`,
    });
  }
}

/** A pattern `compile` refuses, with what the pattern must be. */
export function patternIssue(compile: () => unknown, path: ConfigPath, issues: SemanticIssue[]): void {
  try {
    compile();
  } catch (e) {
    const expected = (e as { details?: { expected?: string } }).details?.expected;
    issues.push({ path, message: `must be ${expected ?? 'a valid path pattern'}` });
  }
}

/**
 * The engine keeps tokens in integer units of 1 / (window x 1000) token, exact below 2^53 (D-001): a capacity
 * beyond that is refused here with its path, rather than by the engine at start.
 */
export function exactRange(
  capacity: number | undefined,
  windowSeconds: number,
  path: ConfigPath,
  issues: SemanticIssue[],
): void {
  if (capacity === undefined) return;
  if (capacity * windowSeconds * 1000 > Number.MAX_SAFE_INTEGER) {
    const max = Math.floor(Number.MAX_SAFE_INTEGER / (windowSeconds * 1000));
    issues.push({
      path,
      message: `must be at most ${max} for a ${windowSeconds} s window (exact token arithmetic), got ${capacity}`,
    });
  }
}
