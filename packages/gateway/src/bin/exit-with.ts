/**
 * Ends a command the way the `sluice` entry points do: the exit code is set, not forced, so open handles (a
 * closing listener, output still being written to a pipe) finish before the process ends; an unexpected failure
 * is printed with its stack and exits 1.
 *
 * @param run - the command's promise of its exit code.
 */
export function exitWith(run: Promise<number>): void {
  run.then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`sluice: ${(error as Error)?.stack ?? String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
