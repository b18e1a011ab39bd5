import { realpathSync, watch } from 'node:fs';
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

/**
 * Calls `changed` once a configuration file's changes settle. The folder is watched, not the file: editors and
 * configuration management replace files by renaming, which a watch on the file itself would lose. An event for
 * another name counts when the file now resolves elsewhere: a Kubernetes ConfigMap volume links the file through
 * `..data`, and the kubelet updates it by renaming a new `..data` over the old one, so no event names the file.
 *
 * @param file - the configuration file.
 * @param changed - called after each settled change.
 * @param logger - where a watch that cannot start or fails is reported (SIGHUP still reloads).
 * @returns a function that stops watching.
 */
export function watchConfigFile(file: string, changed: () => void, logger: Logger): () => void {
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
    return () => {
      watcher.close();
      stopTimer();
    };
  } catch (e) {
    logger.warn({ err: e }, 'cannot watch the configuration file; SIGHUP still reloads');
    return stopTimer;
  }
}
