// Runs before `npm start`, `npm test` and `npm run bench`: a fresh clone has no node_modules yet, and the README
// promises that these commands work as typed. Installs exactly the lock file's versions, once.
//
// With --tools (before `npm test`) it also makes sure the programs the suite starts for real are installed: as
// root with apt-get it installs the missing ones through scripts/system-deps.sh (the script .ci/run uses);
// otherwise it stops at once, naming the one command to run, instead of letting suites fail one by one later.
import { execFileSync, execSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { INSTALL_COMMAND, missingTools, missingToolsMessage } from './system-tools.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

if (process.argv.includes('--tools')) {
  let missing = missingTools();
  const canInstall = process.getuid?.() === 0 && onPath('apt-get');
  if (missing.length > 0 && canInstall) {
    try {
      execFileSync('bash', ['scripts/system-deps.sh'], { stdio: 'inherit', cwd: root });
    } catch {
      // apt-get said why above; the message below still names what is missing and the way out.
    }
    missing = missingTools();
  }
  if (missing.length > 0) {
    // Root without apt-get cannot use the script: the system's own package manager has to.
    const command =
      process.getuid?.() === 0 && !canInstall ? "this system's package manager" : INSTALL_COMMAND;
    console.error(missingToolsMessage(missing, command));
    process.exit(1);
  }
}

if (!existsSync(new URL('../node_modules/.package-lock.json', import.meta.url))) {
  console.log('First run: installing dependencies with npm ci ...');
  execSync('npm ci --no-audit --no-fund', { stdio: 'inherit', cwd: root });
}

function onPath(command) {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
