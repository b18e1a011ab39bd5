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

const NEGATIVE_NUMBER = /^-\d/;

/**
 * The arguments with a negative number given to an option that takes a value joined to it (`--top -1` as
 * `--top=-1`). `parseArgs` reads `-1` as an option and refuses the pair as ambiguous, naming neither the option's
 * range nor what was wrong; joined, the value reaches the command's own check, which says both.
 *
 * @param argv - the arguments.
 * @param options - the options as `parseArgs` takes them.
 */
export function joinNegativeValues(
  argv: readonly string[],
  options: Readonly<Record<string, { readonly type: 'string' | 'boolean'; readonly short?: string }>>,
): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = argv[i + 1];
    if (a === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (next !== undefined && NEGATIVE_NUMBER.test(next) && takesValue(a, options)) {
      // A short option takes its value joined without `=` (`-p-1`).
      out.push(a.startsWith('--') ? `${a}=${next}` : `${a}${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

function takesValue(
  arg: string,
  options: Readonly<Record<string, { readonly type: 'string' | 'boolean'; readonly short?: string }>>,
): boolean {
  if (arg.startsWith('--') && !arg.includes('=')) return options[arg.slice(2)]?.type === 'string';
  if (arg.length === 2 && arg.startsWith('-')) {
    for (const o of Object.values(options)) if (o.short === arg[1]) return o.type === 'string';
  }
  return false;
}
