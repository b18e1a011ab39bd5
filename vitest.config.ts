import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(`./packages/sluice/src/${p}`, import.meta.url));

// Tests run against the TypeScript sources; the workspace packages resolve to src, never to a stale dist.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^sluice$/, replacement: src('core/index.ts') },
      { find: /^sluice\/(.+)$/, replacement: src('$1/index.ts') },
    ],
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    coverage: {
      provider: 'v8',
      include: ['packages/*/src/**/*.ts'],
      exclude: ['**/*.test.ts', '**/testing/**', '**/examples/**'],
      reporter: ['text-summary', 'json-summary'],
      thresholds: {
        'packages/sluice/src/core/**': { lines: 95 },
        'packages/sluice/src/memory/**': { lines: 95 },
        'packages/sluice/src/redis/**': { lines: 95 },
      },
    },
  },
});
