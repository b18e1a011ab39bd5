import { JSON_FIELDS } from '../replay/json-fields.js';

/** One option of a log command's help: how it is written and what it does, in one line. */
type HelpOption = readonly [usage: string, meaning: string];

function help(usage: string, options: readonly HelpOption[], examples: readonly string[]): string {
  const width = Math.max(...options.map(([u]) => u.length));
  return [
    usage.trimEnd(),
    '',
    'Options:',
    ...options.map(([u, m]) => `  ${u.padEnd(width)}  ${m}`),
    '',
    'Example:',
    ...examples.map((e) => `  ${e}`),
    '',
  ].join('\n');
}

const FORMAT: HelpOption = [
  '--format FORMAT',
  'auto (default: from the first line a format reads), combined, common, envoy, json or gateway',
];
const FIELD: HelpOption = [
  '--field NAME=PATH',
  `where a JSON log holds a fact (${JSON_FIELDS.join(', ')}); repeatable`,
];
const REORDER: HelpOption = [
  '--reorder-window DURATION',
  "how late a line may be and still be decided in time order (default 120s: servers stamp a request's start and write its line at its end); 0 takes lines as they come",
];
const JSON_OPTION: HelpOption = ['--json', 'print the report as JSON'];
const HELP: HelpOption = ['-h, --help', 'print this help'];

/**
 * The help of `sluice replay`.
 *
 * @param usage - its usage line.
 */
export function replayHelp(usage: string): string {
  return help(
    usage,
    [
      ['-c, --config FILE', 'the configuration whose admission decides the requests (required)'],
      [
        '--against OTHER.yaml',
        'a second configuration decided on the same requests, and the requests that flip',
      ],
      FORMAT,
      FIELD,
      REORDER,
      [
        '--duration-unit UNIT',
        'the unit of a whole-number duration at the end of a combined or common line or in a JSON field: s (Apache %T), ms or us (Apache %D, the default of combined and common); a number with a decimal point is seconds (NGINX $request_time)',
      ],
      JSON_OPTION,
      ['--html FILE', 'also write the report as one self-contained HTML page'],
      HELP,
      [
        'LOG...',
        'access logs, plain or gzip, UTF-8, UTF-16 or UTF-32, merged by time; - reads standard input',
      ],
    ],
    ['sluice replay --config rate-limits.yaml --against stricter.yaml --html report.html access.log'],
  );
}

/**
 * The help of `sluice recommend`.
 *
 * @param usage - its usage line.
 */
export function recommendHelp(usage: string): string {
  return help(
    usage,
    [
      [
        '-c, --config FILE',
        "propose limits for this file's tiers and endpoint rules (default: path templates)",
      ],
      ['--spare SHARE', 'the largest share of clients the limits may limit, 0 to 0.5 (default 0.01)'],
      ['--top N', 'without --config: the most requested path templates proposed as rules (default 10)'],
      FORMAT,
      FIELD,
      REORDER,
      JSON_OPTION,
      ['--out FILE', 'write the proposed configuration to FILE (only the YAML); the report stays on stdout'],
      HELP,
      [
        'LOG...',
        'access logs, plain or gzip, UTF-8, UTF-16 or UTF-32; - reads standard input; spanning an hour or more for a requestsPerHour',
      ],
    ],
    [
      'sluice recommend --config rate-limits.yaml --out proposed.yaml access.log',
      'sluice validate proposed.yaml && sluice replay --config proposed.yaml access.log',
    ],
  );
}
