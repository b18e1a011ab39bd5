// Runs before `npm start` and `npm test`: a fresh clone has no node_modules yet, and the README promises that
// these two commands work as typed. Installs exactly the lock file's versions, once.
import { execSync } from 'node:child_process';
import { existsSync } from 'node:fs';

if (!existsSync(new URL('../node_modules/.package-lock.json', import.meta.url))) {
  console.log('First run: installing dependencies with npm ci ...');
  execSync('npm ci --no-audit --no-fund', { stdio: 'inherit', cwd: new URL('..', import.meta.url) });
}
