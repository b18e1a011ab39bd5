/** Registers a signal handler and returns a function that removes it (`CliIo.onSignal`). */
export type OnSignal = (signal: NodeJS.Signals, handler: () => void) => () => void;

/**
 * The command's signal handlers, installed once before anything starts and kept until shutdown begins. Signals
 * that arrive before a handler is routed (the gateway is still starting) are held and delivered when it is.
 * Handlers are never removed and added again in between: Node.js stops its signal watcher when the last
 * listener goes, and a signal it had taken but not yet delivered is then dropped (seen as a `SIGTERM` that never
 * stopped a starting `sluice serve --threads`).
 *
 * @example
 * ```ts
 * const signals = new SignalRouter(io.onSignal, ['SIGINT', 'SIGTERM']);
 * await start();
 * signals.route((s) => void stop());
 * ```
 */
export class SignalRouter {
  readonly #held: NodeJS.Signals[] = [];
  readonly #off: (() => void)[];
  #handler: ((signal: NodeJS.Signals) => void) | undefined;

  /**
   * @param onSignal - registers a handler.
   * @param signals - the signals to catch; the others keep Node.js's default action.
   */
  constructor(onSignal: OnSignal, signals: readonly NodeJS.Signals[]) {
    this.#off = signals.map((s) =>
      onSignal(s, () => {
        if (this.#handler === undefined) this.#held.push(s);
        else this.#handler(s);
      }),
    );
  }

  /** Sends signals to `handler` from now on, first those held so far, in their order. */
  route(handler: (signal: NodeJS.Signals) => void): void {
    this.#handler = handler;
    for (const s of this.#held.splice(0)) handler(s);
  }

  /** Removes the handlers: a further signal takes Node.js's default action (a second Ctrl-C ends at once). */
  off(): void {
    for (const f of this.#off.splice(0)) f();
  }
}
