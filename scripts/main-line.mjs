// Runs an npm script on a supported Node.js: `npm start`, `npm test`, `npm run bench` and `npm run docs:images`
// call this first. On Node.js 22.12 or newer it runs the script as it is; on an older system Node.js (a machine
// that ships 20, say) it runs it on the main line, Node.js 24, from npm's `node` package (installed once into the
// cache of scripts/node-line.mjs), and says so in one line. Everything the script starts (npm ci, vitest, tsx,
// the gateway) then runs on that Node.js, because its bin folder comes first on PATH.
//
//   node scripts/main-line.mjs <npm script> [args...]
//   node scripts/main-line.mjs --which          prints the Node.js binary those scripts run on, and its version
import { spawnSync } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAIN_LINE, nodeLine, nodeVersion, supportedNode } from './node-line.mjs';

const [script, ...args] = process.argv.slice(2);
if (script === undefined) {
  console.error('usage: node scripts/main-line.mjs <npm script> [args...] | --which');
  process.exit(2);
}

const env = { ...process.env };
let node = process.execPath;
if (!supportedNode(process.versions.node)) {
  let bin;
  try {
    bin = nodeLine(MAIN_LINE, { quiet: true });
  } catch (error) {
    console.error(
      `Node.js ${process.version} is older than 22.12, and installing Node.js ${MAIN_LINE} from npm's node package failed:\n${error.message}\nInstall Node.js ${MAIN_LINE} (or 22.12 or newer) and run the command again.`,
    );
    process.exit(1);
  }
  console.log(
    `Node.js ${process.version} is older than 22.12: running on Node.js ${nodeVersion(join(bin, 'node'))} from npm's node package (${bin})`,
  );
  env.PATH = `${bin}${delimiter}${env.PATH ?? ''}`;
  node = join(bin, 'node');
}

if (script === '--which') {
  console.log(`${node} ${nodeVersion(node)}`);
  process.exit(0);
}

const root = fileURLToPath(new URL('..', import.meta.url));
const run = spawnSync('npm', ['run', '-s', script, ...(args.length > 0 ? ['--', ...args] : [])], {
  cwd: root,
  env,
  stdio: 'inherit',
});
if (run.error) throw run.error;
process.exit(run.status ?? 1);
