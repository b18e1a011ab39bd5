import { readFileSync, realpathSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../log/create-logger.js';

/** How long file events must settle before a change is acted on: one save often arrives as several events. */
const SETTLE_MS = 50;

/** Where a path resolves through its symlinks now, or undefined while it does not exist. */
function resolved(file: string): string | undefined {
  try {
    return realpathSync(file);
  } catch {
    return undefined;
  }
}

/** The file's text now, or undefined while it cannot be read (the reload reports why). */
function currentText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Calls `changed` once a configuration file's changes settle. The folder is watched, not the file: editors and
 * configuration management replace files by renaming, which a watch on the file itself would lose. An event for
 * another name counts when the file now resolves elsewhere: a Kubernetes ConfigMap volume links the file through
 * `..data`, and the kubelet updates it by renaming a new `..data` over the old one, so no event names the file.
 *
 * A save made after the gateway read the file but before the watch attached gives no event (the threads of
 * `sluice serve --threads` take over a second to start after the file is read): with `loaded`, the text the
 * gateway runs, the file is read once the watch is attached and a different text counts as a change.
 *
 * @param file - the configuration file.
 * @param changed - called after each settled change.
 * @param logger - where a watch that cannot start or fails is reported (SIGHUP still reloads).
 * @param loaded - the text the gateway loaded from the file, when it has it.
 * @returns a function that stops watching.
 */
export function watchConfigFile(
  file: string,
  changed: () => void,
  logger: Logger,
  loaded?: string,
): () => void {
  const name = basename(file);
  let target = resolved(file);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stopTimer = () => {
    if (timer !== undefined) clearTimeout(timer);
  };
  try {
    const watcher = watch(dirname(file), (_event, which) => {
      if (which !== null && which !== name) {
        // Events for other names are rare (a folder of configuration), so resolving the links on each is cheap.
        const now = resolved(file);
        if (now === target) return;
        target = now;
      } else target = resolved(file);
      stopTimer();
      timer = setTimeout(changed, SETTLE_MS);
    });
    watcher.on('error', (e) => logger.warn({ err: e }, 'configuration watch failed; SIGHUP still reloads'));
    // Read after attaching: a save from now on gives an event, one before it shows in the text.
    if (loaded !== undefined && timer === undefined && currentText(file) !== loaded)
      timer = setTimeout(changed, SETTLE_MS);
    return () => {
      watcher.close();
      stopTimer();
    };
  } catch (e) {
    logger.warn({ err: e }, 'cannot watch the configuration file; SIGHUP still reloads');
    return stopTimer;
  }
}
