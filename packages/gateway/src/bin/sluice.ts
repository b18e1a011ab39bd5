#!/usr/bin/env node
import { main } from '../cli/main.js';

// The exit code is set, not forced: open handles (a closing listener) finish before the process ends.
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`sluice: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
