/**
 * A vitest reporter that ends the summary with the suites a SLUICE_SKIP_* variable left out, so an opted-out
 * suite is never mistaken for a passing one. Prints nothing when nothing was left out.
 */
import type { Reporter, Vitest } from 'vitest/node';
import type { OptedOutSuite } from './suite-kinds.js';

/** Lists the opted-out suites after vitest's own summary (the project they belong to must have been selected). */
export class OptOutReporter implements Reporter {
  private vitest: Vitest | undefined;

  constructor(
    private readonly optedOut: readonly OptedOutSuite[],
    private readonly project: string,
  ) {}

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunEnd(): void {
    if (this.optedOut.length === 0) return;
    if (this.vitest !== undefined && !this.vitest.projects.some((p) => p.name === this.project)) return;
    const lines = this.optedOut.map((s) => `   ${s.file}  (${s.variables.join(', ')})`);
    const out = this.vitest?.logger ?? console;
    out.log(
      [
        '',
        ` opted out: ${this.optedOut.length} suite${this.optedOut.length === 1 ? '' : 's'} not run`,
        ...lines,
        '   (the coverage thresholds count on every suite; unset the variables before a commit)',
        '',
      ].join('\n'),
    );
  }
}
