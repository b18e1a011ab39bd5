// The application folder of the container image: both packages packed from a built working tree (`npm run build`
// first) and installed from the tarballs without dev dependencies, as a user's `npm install @sluice/gateway` would
// have them. The Dockerfile's build stage runs it; a host that already built (CI, or a network without access to
// the npm registry from inside the build) runs it itself and builds the image's `prebuilt` target from the folder.
//
//   node scripts/image-app.mjs DEST    writes DEST/node_modules (with .bin/sluice) and DEST/package.json
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dest = process.argv[2];
if (dest === undefined || process.argv.length > 3) {
  console.error('usage: node scripts/image-app.mjs DEST');
  process.exit(2);
}
if (!existsSync(join(ROOT, 'packages/gateway/dist/bin/sluice.js'))) {
  console.error('image-app: packages/gateway/dist is missing: run npm run build first');
  process.exit(1);
}

const npm = (args, cwd) =>
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });

const packs = mkdtempSync(join(tmpdir(), 'sluice-image-packs-'));
try {
  npm(['pack', '--pack-destination', packs, '-w', 'packages/sluice', '-w', 'packages/gateway'], ROOT);
  const tarballs = readdirSync(packs)
    .filter((f) => f.endsWith('.tgz'))
    .map((f) => join(packs, f));
  const app = resolve(dest);
  rmSync(app, { recursive: true, force: true });
  mkdirSync(app, { recursive: true });
  writeFileSync(
    join(app, 'package.json'),
    `${JSON.stringify({ name: 'sluice-image', private: true, description: 'The sluice gateway of the container image' }, null, 2)}\n`,
  );
  // --prefer-offline: the build stage's `npm ci` (or the host's) has just filled npm's cache with these versions.
  npm(
    ['install', '--omit=dev', '--prefer-offline', '--install-links', '--no-package-lock', ...tarballs],
    app,
  );
  // npm wrote the tarballs' temporary paths; the image names the versions it holds instead.
  const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
  for (const name of Object.keys(manifest.dependencies)) {
    manifest.dependencies[name] = JSON.parse(
      readFileSync(join(app, 'node_modules', name, 'package.json'), 'utf8'),
    ).version;
  }
  writeFileSync(join(app, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
} finally {
  rmSync(packs, { recursive: true, force: true });
}
