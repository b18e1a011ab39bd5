// Runs before `npm start`, `npm test` and `npm run bench`: a fresh clone has no node_modules yet, and the README
// promises that these commands work as typed. Installs exactly the lock file's versions, once.
//
// With --tools (before `npm test`) it first makes sure the programs the suites start for real are installed: as
// root with apt-get it installs the missing ones through scripts/system-deps.sh (the script .ci/run uses);
// otherwise (or with SLUICE_NO_INSTALL=1) it stops at once, naming the one command to run, instead of letting
// suites fail one by one minutes later.
import { execFileSync, execSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { INSTALL_COMMAND, missingTools, missingToolsMessage } from './system-tools.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));

if (process.argv.includes('--tools')) {
  let missing = missingTools();
  const root = process.getuid?.() === 0;
  const aptGet = onPath('apt-get');
  // SLUICE_NO_INSTALL=1: a root shell (a container, say) that must not get packages installed behind its back.
  const canInstall = root && aptGet && !process.env.SLUICE_NO_INSTALL;
  if (missing.length > 0 && canInstall) {
    try {
      execFileSync('bash', ['scripts/system-deps.sh'], { stdio: 'inherit', cwd: repo });
    } catch {
      // apt-get said why above; the message below still names what is missing and the way out.
    }
    missing = missingTools();
  }
  if (missing.length > 0) {
    // Root needs no sudo (and may not have it); without apt-get the system's own package manager has to do.
    const command = !aptGet
      ? "this system's package manager"
      : root
        ? 'bash scripts/system-deps.sh'
        : INSTALL_COMMAND;
    console.error(missingToolsMessage(missing, command));
    process.exit(1);
  }
}

if (!existsSync(new URL('../node_modules/.package-lock.json', import.meta.url))) {
  console.log('First run: installing dependencies with npm ci ...');
  execSync('npm ci --no-audit --no-fund', { stdio: 'inherit', cwd: repo });
}

function onPath(command) {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
