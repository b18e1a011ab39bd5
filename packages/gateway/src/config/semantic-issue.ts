import type { ConfigPath } from './violation.js';

/** A problem found after the schema passed: a rule that spans several keys, or a name that must exist. */
export interface SemanticIssue {
  readonly path: ConfigPath;
  readonly message: string;
  /** Point at the key itself rather than its value (for a misplaced key). */
  readonly atKey?: boolean;
}
