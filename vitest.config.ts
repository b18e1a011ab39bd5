import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { OptOutReporter } from './test/support/opt-out-reporter.js';
import { sortSuites, TEST_GLOBS } from './test/support/suite-kinds.js';
import { UNIT_PROJECT_VAR } from './test/support/tools.js';

const src = (p: string) => fileURLToPath(new URL(`./packages/sluice/src/${p}`, import.meta.url));

// Two projects: `unit` (no program started, no child process: `npm run test:unit`) and `system` (end-to-end,
// browser, packaging, and every suite that starts redis-server, nginx, Prometheus, ...), minus the suites a
// SLUICE_SKIP_* variable leaves out, which the OptOutReporter lists at the end of the run.
const suites = sortSuites(fileURLToPath(new URL('.', import.meta.url)));

// Tests run against the TypeScript sources; the workspace packages resolve to src, never to a stale dist.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^sluice$/, replacement: src('core/index.ts') },
      { find: /^sluice\/(.+)$/, replacement: src('$1/index.ts') },
    ],
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', new OptOutReporter(suites.optedOut, 'system')],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          // One process for every unit file instead of one each: the suites share no state that outlives them
          // (they restore what they stub), and the fork and module graph per file were half the project's time.
          isolate: false,
          // First, before the system suites; two processes, one a core: with coverage on, 89 s alone against 73 s
          // in two (the suites spread by vitest, each process still running its share of files in one module graph).
          sequence: { groupOrder: 0 },
          maxWorkers: 2,
          include: TEST_GLOBS,
          exclude: [...configDefaults.exclude, '**/*.e2e.test.ts', '**/*.browser.test.ts', ...suites.system],
          env: { [UNIT_PROJECT_VAR]: 'unit' },
        },
      },
      {
        extends: true,
        test: {
          name: 'system',
          include: [...suites.systemToRun],
          // Then two files at a time: a system suite mostly waits for the programs it started.
          sequence: { groupOrder: 1 },
          maxWorkers: 2,
        },
      },
    ],
    coverage: {
      provider: 'v8',
      include: ['packages/*/src/**/*.ts'],
      exclude: ['**/*.test.ts', '**/testing/**', '**/examples/**'],
      reporter: ['text-summary', 'json-summary'],
      thresholds: {
        'packages/sluice/src/core/**': { lines: 95 },
        'packages/sluice/src/memory/**': { lines: 95 },
        'packages/sluice/src/redis/**': { lines: 95 },
        // Regression guards a little under today's figures; the element's code runs in Chromium, outside V8 coverage.
        'packages/sluice/src/http/**': { lines: 95 },
        'packages/sluice/src/{node,express,fastify,hono}/**': { lines: 80 },
        'packages/sluice/src/{metrics,prometheus,otel,quota}/**': { lines: 88 },
        'packages/sluice/src/client/**': { lines: 65 },
        'packages/gateway/src/**': { lines: 85 },
      },
    },
  },
});
