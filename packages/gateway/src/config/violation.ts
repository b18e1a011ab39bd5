/** A path into the configuration: object keys and array indexes, from the root. */
export type ConfigPath = readonly (string | number)[];

/** One problem found in a configuration file: where it is and what is wrong. */
export interface Violation {
  /** Dotted path such as `rateLimiting.endpoints[1].window`; empty for the whole file. */
  readonly path: string;
  /** 1-based line of the offending node in the file, or 0 when unknown. */
  readonly line: number;
  /** 1-based column, or 0 when unknown. */
  readonly column: number;
  /** What is wrong and what is expected. */
  readonly message: string;
}

/** Renders a path as `a.b[2].c`; keys that are not identifiers are quoted (`tiers["my tier"]`). */
export function formatPath(path: ConfigPath): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(part)) out += out === '' ? part : `.${part}`;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out;
}

/**
 * Renders violations one a line as `file:line:column path: message`, the shape editors and CI logs link; a
 * violation without a position (an empty file, a check of the resolved configuration) is `file path: message`.
 *
 * @param file - the file name shown first.
 */
export function formatViolations(file: string, violations: readonly Violation[]): string {
  return violations
    .map((v) => `${located(file, v)} ${v.path === '' ? '(file)' : v.path}: ${v.message}`)
    .join('\n');
}

/** `file:line:column`, or the file alone when the position is unknown (line 0 is no line an editor can open). */
export function located(file: string, at: { readonly line: number; readonly column: number }): string {
  return at.line > 0 ? `${file}:${at.line}:${at.column}` : file;
}
