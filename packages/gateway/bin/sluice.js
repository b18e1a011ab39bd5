#!/usr/bin/env node
// The `sluice` command that npm links. npm links bins when it installs, before anything is built, so the link
// has to point at a committed file: this one hands over to the compiled command in dist/, and says how to build
// it when a fresh clone has not been built yet.
import { existsSync, statSync } from 'node:fs';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

const cli = new URL('../dist/bin/sluice.js', import.meta.url);
// `sluice replay` and `sluice recommend` start from one bundled file (D-G63, `npm run build` writes it).
const logCommands = new URL('../dist/bin/log-commands.bundle.mjs', import.meta.url);
const [major, minor] = process.versions.node.split('.').map(Number);

/**
 * Whether the log commands' bundle holds the code `tsc -b` last compiled: in a working tree, compiling without the
 * rest of `npm run build` leaves the bundle older than the compilers' build records, and the modules in dist/ run
 * instead. An installed package has no build records.
 */
function bundleIsCurrent() {
  const bundle = statSync(logCommands, { throwIfNoEntry: false });
  if (bundle === undefined) return false;
  for (const record of ['../tsconfig.tsbuildinfo', '../../sluice/tsconfig.tsbuildinfo']) {
    const built = statSync(new URL(record, import.meta.url), { throwIfNoEntry: false });
    if (built !== undefined && built.mtimeMs > bundle.mtimeMs) return false;
  }
  return true;
}

// engines says >=22.12; npm only warns about it, so an older Node.js is named here before anything half works.
if (major < 22 || (major === 22 && minor < 12)) {
  process.stderr.write(
    `sluice: needs Node.js 22.12 or newer (24 recommended); this is ${process.version}.\n` +
      'In the repository, npm start and npm test fetch Node.js 24 by themselves.\n',
  );
  process.exitCode = 1;
} else if ((process.argv[2] === 'replay' || process.argv[2] === 'recommend') && bundleIsCurrent()) {
  // Node.js keeps the bundle's compiled code in its compile cache (the system's temporary directory, or
  // NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off), which spares each later run compiling it
  // again (D-G140). A directory that cannot be written leaves it off: enableCompileCache reports that, never throws.
  module.enableCompileCache?.();
  await import(logCommands.href);
} else if (existsSync(cli)) {
  await import(cli.href);
} else {
  process.stderr.write(
    `sluice: the command is not built yet (${fileURLToPath(cli)} is missing).\n` +
      'Run npm run build in the repository root, then try again.\n',
  );
  process.exitCode = 1;
}
