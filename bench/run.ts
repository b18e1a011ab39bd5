/**
 * `npm run bench`: runs every `bench/*.bench.ts` in turn, each in its own process, and prints their Markdown.
 * Pass names to run a subset: `npm run bench -- engine http`.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.includes(f.replace('.bench.ts', '')))
  .sort();
let failed = 0;
for (const f of files) {
  console.log(`\n## ${f}\n`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', `${dir}${f}`], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
