import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const PACKAGES = ['sluice', 'gateway'];

/** The TypeScript sources of a package's src folder, without its tests. */
function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !/\.test\.ts$/.test(f))
    .map((f) => join(dir, f));
}

/**
 * The `sluice` command compiled from the current sources, for suites that start it many times: `node --import tsx`
 * costs a worker thread of `sluice serve --threads` several times the start of the same code as JavaScript (the
 * loader hooks run for every module of every thread). Each source file is transpiled on its own by esbuild (as
 * tsx does, without bundling) into a temporary copy of the repository's layout: every other file of both packages
 * and the root `node_modules` are linked there, so that files found relative to a module (the schema, the proto
 * files, the dashboard assets, `package.json`) and dependencies resolve as from the sources; the `sluice`
 * specifiers, which tsx maps to the sources through tsconfig paths, are pointed at the compiled sources of the
 * sluice package. The sources are read now: a suite sees the code as it is when it starts.
 *
 * @returns the path of the compiled `bin/sluice.js` and a function that removes the copy.
 */
export async function compiledSluice(): Promise<{ bin: string; remove: () => void }> {
  const out = mkdtempSync(join(tmpdir(), 'sluice-compiled-'));
  symlinkSync(join(ROOT, 'node_modules'), join(out, 'node_modules'));
  for (const name of PACKAGES) {
    const from = join(ROOT, 'packages', name);
    const to = join(out, 'packages', name);
    const entryPoints = sources(join(from, 'src'));
    await build({
      entryPoints,
      outdir: join(to, 'src'),
      outbase: join(from, 'src'),
      format: 'esm',
      platform: 'node',
      // The oldest Node.js a suite may start it with (the test of a Node.js without threads).
      target: 'node20',
      bundle: false,
      logLevel: 'silent',
    });
    for (const entry of readdirSync(from)) {
      if (entry !== 'src' && entry !== 'node_modules') symlinkSync(join(from, entry), join(to, entry));
    }
  }
  // tsconfig paths of the repository: `sluice` is core, `sluice/x` is x, each at its index.
  const sluiceSrc = join(out, 'packages', 'sluice', 'src');
  const gatewaySrc = join(out, 'packages', 'gateway', 'src');
  const specifier = /(\bfrom\s*|\bimport\s*\(\s*|^\s*import\s*)(['"])sluice(?:\/([\w-]+))?\2/gm;
  const compiled = [sluiceSrc, gatewaySrc].flatMap((dir) =>
    readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((f) => join(dir, f)),
  );
  for (const path of compiled) {
    if (!path.endsWith('.js')) continue;
    const text = readFileSync(path, 'utf8');
    const rewritten = text.replace(specifier, (_m, lead: string, quote: string, sub: string | undefined) => {
      const target = relative(dirname(path), join(sluiceSrc, sub ?? 'core', 'index.js'));
      return `${lead}${quote}${target.startsWith('.') ? target : `./${target}`}${quote}`;
    });
    if (rewritten !== text) writeFileSync(path, rewritten);
  }
  return {
    bin: join(gatewaySrc, 'bin', 'sluice.js'),
    remove: () => rmSync(out, { recursive: true, force: true }),
  };
}
