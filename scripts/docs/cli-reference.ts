/**
 * The command line page: the `--help` text of `sluice` and of each command that has its own, as the command prints
 * it (the CLI is run in this process with its output captured, so the page cannot drift from the binary).
 */
import { main } from '../../packages/gateway/src/cli/main.js';

/** The invocations whose help the page shows, in order. */
export const HELP_COMMANDS: readonly (readonly string[])[] = [
  ['--help'],
  ['replay', '--help'],
  ['recommend', '--help'],
  // `sluice block --help` prints the same text: one help covers both commands.
  ['override', '--help'],
];

async function helpOf(argv: readonly string[]): Promise<string> {
  let text = '';
  const code = await main(argv, {
    out: (t) => {
      text += t;
    },
    err: (t) => {
      text += t;
    },
    onSignal: () => () => {},
  });
  if (code !== 0) throw new Error(`sluice ${argv.join(' ')} exited ${code}: ${text}`);
  return text;
}

/** The page's Markdown. */
export async function cliReferencePage(): Promise<string> {
  const out = [
    '# Command line',
    '',
    'The `sluice` command of `@sluice/gateway` (`npx sluice`). Each section is the text the command prints for',
    'the invocation in its heading (`sluice block --help` prints the text of `sluice override --help`).',
    '',
  ];
  for (const argv of HELP_COMMANDS) {
    out.push(`## \`sluice ${argv.join(' ')}\``, '', '```text', (await helpOf(argv)).trimEnd(), '```', '');
  }
  return out.join('\n');
}
