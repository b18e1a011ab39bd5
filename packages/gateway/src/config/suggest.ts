/**
 * The known name closest to a mistyped one, for "did you mean" hints on unknown configuration keys. Only a
 * close match is offered (edit distance at most a third of the name, at least 2), so a hint is never a guess.
 *
 * @param given - the unknown name.
 * @param known - the names allowed at that place.
 * @returns the best candidate, or `undefined` when none is close.
 */
export function closestName(given: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  const limit = Math.max(2, Math.floor(given.length / 3));
  for (const candidate of known) {
    const d = distance(given.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate;
    }
  }
  return bestDistance <= limit ? best : undefined;
}

/**
 * A " (did you mean ...?)" suffix for a message about an unknown name, or "" when no known name is close.
 *
 * @param given - the unknown name.
 * @param known - the names defined.
 */
export function didYouMean(given: string, known: readonly string[]): string {
  const s = closestName(given, known);
  return s === undefined ? '' : ` (did you mean "${s}"?)`;
}

/**
 * The message of a reference to a name that is not defined: the kind, the name, what is defined and the closest.
 *
 * @param kind - what was named (`tier`, `class`).
 * @param given - the name given.
 * @param known - the names defined.
 */
export function unknownName(kind: string, given: string, known: readonly string[]): string {
  return `${kind} "${given}" is not defined; defined: ${known.join(', ')}${didYouMean(given, known)}`;
}

/** Damerau-Levenshtein (optimal string alignment) distance: a swapped pair of letters counts as one edit. */
function distance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => {
    const row = new Array<number>(cols).fill(0);
    row[0] = i;
    return row;
  });
  for (let j = 0; j < cols; j++) d[0][j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}
