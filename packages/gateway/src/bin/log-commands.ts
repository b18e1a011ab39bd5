#!/usr/bin/env node
/**
 * The entry point of `sluice replay` and `sluice recommend` that the build bundles into one file
 * (`dist/bin/log-commands.bundle.mjs`, written by `scripts/build-log-commands.ts`): the committed `bin/sluice.js`
 * loads it for these two commands, so a replay starts without resolving and loading some 200 modules one by one
 * (D-G63). It runs what `main` runs for them, with the same output and exit codes.
 */
import { recommendCommand } from '../cli/recommend-command.js';
import { type LogCommandIo, replayCommand } from '../cli/replay-command.js';
import { exitWith } from './exit-with.js';

const io: LogCommandIo = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
};

const [command, ...rest] = process.argv.slice(2);
exitWith(command === 'recommend' ? recommendCommand(rest, io) : replayCommand(rest, io));
