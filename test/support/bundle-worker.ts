/**
 * Bundles a TypeScript worker entry into one ES module that `new Worker()` runs on every Node line (20 has no
 * type stripping, and loader hooks reach worker threads differently per line). The bundle lands under the
 * repository's node_modules/.cache, so the packages it leaves external still resolve.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Bundles `entry` (an absolute path to a .ts file) and returns the path of the bundle. */
export async function bundleWorker(entry: string): Promise<string> {
  const dir = join(root, 'node_modules', '.cache', 'sluice-workers');
  mkdirSync(dir, { recursive: true });
  const outfile = join(
    dir,
    `${createHash('sha1').update(entry).digest('hex').slice(0, 12)}-${process.pid}.mjs`,
  );
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'error',
    // A bundled CommonJS dependency may call require(); ESM output has none unless given one.
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  });
  return outfile;
}
