import { closestName } from '../config/suggest.js';

/**
 * The error line for a command that does not exist, with the command probably meant when one is close enough
 * (the same rule as unknown configuration keys, so a hint is never a guess).
 *
 * @param given - the command typed.
 * @param commands - the commands that exist.
 */
export function unknownCommandMessage(given: string, commands: readonly string[]): string {
  const s = closestName(given, commands);
  return `unknown command "${given}"${s === undefined ? '' : ` (did you mean "${s}"?)`}`;
}

/**
 * The error line for an option `node:util` `parseArgs` does not know, with the long option probably meant.
 *
 * @param error - what `parseArgs` threw.
 * @param longOptions - the long option names, without dashes.
 * @returns the line, or `undefined` when the error is not about an unknown option (then its own message says it).
 */
export function unknownOptionMessage(error: unknown, longOptions: readonly string[]): string | undefined {
  if ((error as { code?: string } | null)?.code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return undefined;
  const given = /'(-[^']*)'/.exec((error as Error).message)?.[1];
  if (given === undefined) return undefined;
  // Only long options get a hint: one letter is too short to tell a typo from another option.
  const s = given.startsWith('--') ? closestName(given.slice(2), longOptions) : undefined;
  return `unknown option "${given}"${s === undefined ? '' : ` (did you mean "--${s}"?)`}`;
}
