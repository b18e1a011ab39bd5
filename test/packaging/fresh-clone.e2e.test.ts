/**
 * What a newcomer and a user do, for real: a fresh copy of the repository (the files a clone of this working tree
 * would have), `npm ci`, `npx sluice --help` before and after `npm run build`; then both packages packed with
 * `npm pack`, installed from the tarballs into an empty project (offline, from npm's cache) and used from ESM,
 * from CommonJS (require(esm)) and from TypeScript with `module: nodenext`.
 *
 * A copy of the working tree rather than `git clone`: a clone holds only commits, and the test must see the
 * package.json and launcher being changed. `npm ci` runs for real (about a minute on two cores): linking the
 * bins at install time is what the test is about, so a copied or linked node_modules would prove nothing.
 * `npm exec --no -- sluice` is `npx sluice` that never fetches a package named sluice from the registry.
 *
 * Once installed, the copy runs its unit suites while the build, the packing and the installs into the consumer
 * project go on beside them (they share nothing but the CPU: the unit suites read no build output), so the file
 * takes about as long as the longer of the two rather than their sum. Everything else (the packs, the consumer
 * project, the log of the bundle check) lives in a folder of its own, so the copy has nothing beside it
 * throughout.
 */
import { execFile } from 'node:child_process';
import {
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_CACHE } from '../../scripts/node-line.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MINUTE = 60_000;
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string }>;
};

/** The locked version of a package, so that installs in the consumer project come from npm's cache. */
const locked = (name: string) => `${name}@${lock.packages[`node_modules/${name}`]?.version ?? 'latest'}`;

/** Runtime anchors: one or two exports per entry point that the READMEs document. */
const ANCHORS: Record<string, string[]> = {
  sluice: ['Limiter', 'ManualClock', 'SluiceError', 'ErrorCode'],
  'sluice/memory': ['MemoryStore'],
  'sluice/shared': ['SharedStore'],
  'sluice/redis': ['RedisStore'],
  'sluice/http': ['createHttpLimiter'],
  'sluice/node': ['withRateLimit'],
  'sluice/express': ['rateLimit'],
  'sluice/fastify': ['sluiceFastify'],
  'sluice/hono': ['rateLimit'],
  'sluice/client': ['createClient'],
  'sluice/prometheus': ['PrometheusMetrics'],
  'sluice/otel': ['OtelMetrics'],
  'sluice/metrics': ['decideWithMetrics'],
  'sluice/quota': ['QuotaTracker'],
  '@sluice/gateway': ['main', 'loadConfigText'],
};

/** Entry points that load a peer at run time, and the peer a user must install for them. */
const RUNTIME_PEERS: Record<string, string[]> = {
  'sluice/prometheus': ['prom-client'],
  'sluice/fastify': ['fastify-plugin'],
  // Test tools, imported statically (vitest is ESM only): Node names the first one its module graph misses.
  'sluice/testing': ['fast-check', 'vitest'],
};

/** Entry points whose missing peer is a SluiceError ERR_MISSING_PEER with the install command. */
const SLUICE_ERROR_PEERS = new Set(['sluice/prometheus', 'sluice/fastify']);

/** Peers (and the types a TypeScript consumer adds) installed before importing every entry point. */
const PEERS = [
  'prom-client',
  'fastify-plugin',
  'fastify',
  'express',
  '@types/express',
  'hono',
  '@opentelemetry/api',
  '@types/node',
];

interface Result {
  readonly code: number;
  readonly out: string;
}

/**
 * The environment of every command: none of the npm_* variables of the `npm test` that runs this file but the
 * cache and registry, and no node_modules/.bin folder on PATH but the Node.js line's own, so `npx sluice` cannot
 * find the workspace's link.
 */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  const keep = /^npm_config_(cache|registry|userconfig)$/i;
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) || keep.test(k)) env[k] = v;
  env.PATH = (process.env.PATH ?? '')
    .split(delimiter)
    // npm's `node` package (the main line, when the system Node.js is older) stays: it is no workspace's bin.
    .filter((d) => !d.includes('node_modules/.bin') || d.startsWith(NODE_CACHE))
    .join(delimiter);
  env.NO_UPDATE_NOTIFIER = '1';
  return env;
}

/** Runs a command to its end (bounded by `timeout`) and returns its exit code and output. */
function run(cmd: string, args: string[], cwd: string, timeout = 5 * MINUTE): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      { cwd, env: cleanEnv(), timeout, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        const out = `${stdout}${stderr}${error && typeof error.code !== 'number' ? `\n${error.message}` : ''}`;
        resolve({ code, out });
      },
    );
  });
}

/** Like {@link run}, but a failure throws with the command and its output. */
async function ok(cmd: string, args: string[], cwd: string, timeout?: number): Promise<string> {
  const r = await run(cmd, args, cwd, timeout);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.code} in ${cwd}:\n${r.out}`);
  return r.out;
}

/** Copies the files `git` would put in a clone of this working tree (tracked and new, not ignored). */
async function copyWorkingTree(to: string): Promise<void> {
  const listing = await ok('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], ROOT);
  for (const file of listing.split('\0')) {
    if (file === '') continue;
    const from = join(ROOT, file);
    try {
      if (!lstatSync(from).isFile()) continue;
    } catch {
      continue; // deleted in the working tree, not yet in a commit
    }
    mkdirSync(dirname(join(to, file)), { recursive: true });
    copyFileSync(from, join(to, file));
  }
}

/**
 * The module specifiers a compiled file imports: static imports and re-exports at the start of a line (so the
 * examples in doc comments do not count), dynamic imports, and modules loaded by a `require` function made with
 * `createRequire` (`require('ajv')`, `requireModule('jose')`, `requirePeer('prom-client', ...)`).
 */
function importedSpecifiers(text: string): string[] {
  const patterns = [
    /^\s*import\s+(?:[^'"]*?\bfrom\s*)?['"]([^'"]+)['"]/gm,
    /^\s*export\s+[^'"]*?\bfrom\s*['"]([^'"]+)['"]/gm,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
    // A module loaded on demand through createRequire (jose, by the first JWT verifier).
    /\brequire\w*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  return patterns.flatMap((re) => [...text.matchAll(re)].map((m) => m[1]));
}

describe('a fresh clone and the packed packages', () => {
  const work = mkdtempSync(join(tmpdir(), 'sluice-clone-'));
  const clone = join(work, 'clone');
  // Not beside the copy: the copy's unit suites run while these are made.
  const side = mkdtempSync(join(tmpdir(), 'sluice-packs-'));
  const packs = join(side, 'packs');
  const consumer = join(side, 'consumer');
  const tarballs: Record<string, { filename: string; files: string[] }> = {};
  /** What `npm ci` printed in the copy. */
  let installed = '';
  /** What the copy's folder held when its unit suites started. */
  let besideAtStart: string[] = [];
  /** The copy's unit suites, run from the end of the install on. */
  let unitSuites: Promise<Result>;
  /** `npx sluice --help` in the copy before the build, then `npm run build` there. */
  let beforeBuild: Promise<Result>;
  let built: Promise<Result>;

  beforeAll(async () => {
    await copyWorkingTree(clone);
    installed = await ok('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], clone, 8 * MINUTE);
    besideAtStart = readdirSync(work);
    unitSuites = run(
      'npx',
      ['vitest', 'run', '--project', 'unit', '--reporter', 'verbose'],
      clone,
      6 * MINUTE,
    );
    beforeBuild = run('npm', ['exec', '--no', '--', 'sluice', '--help'], clone, MINUTE);
    built = beforeBuild.then(() => run('npm', ['run', 'build'], clone, 6 * MINUTE));
  }, 10 * MINUTE);

  afterAll(async () => {
    // A failed test must not leave the copy's suites or build writing into a folder being removed.
    await Promise.all([unitSuites, built]);
    rmSync(work, { recursive: true, force: true });
    rmSync(side, { recursive: true, force: true });
  }, 7 * MINUTE);

  it('installs on this Node.js line without an engine or install-script warning', () => {
    expect(installed).not.toMatch(/EBADENGINE|npm warn/i);
  });

  it('links the sluice command at install time; before a build it says to run npm run build', async () => {
    const r = await beforeBuild;
    expect(r.out).toMatch(/run npm run build/i);
    expect(r.code).toBe(1);
  });

  it('runs npx sluice --help once built', { timeout: 8 * MINUTE }, async () => {
    const build = await built;
    expect(build.code, build.out).toBe(0);
    const out = await ok('npm', ['exec', '--no', '--', 'sluice', '--help'], clone, MINUTE);
    expect(out).toMatch(/sluice serve/);
    // The build compiles the configuration schema ahead of time, for the schema it ships.
    const loads = await ok(
      'node',
      [
        '--input-type=module',
        '-e',
        [
          "import { createRequire } from 'node:module';",
          "import { schemaText } from './packages/gateway/dist/config/schema.js';",
          "import * as v from './packages/gateway/dist/config/precompiled-validator.js';",
          "const m = createRequire(process.cwd() + '/')('./packages/gateway/dist/config/' + v.PRECOMPILED_VALIDATOR_FILE);",
          'console.log(typeof v.precompiledFor(m, v.validatorDigest(schemaText())));',
        ].join('\n'),
      ],
      clone,
      MINUTE,
    );
    expect(loads.trim()).toBe('function');
  });

  it("replays a log from the log commands' bundle as the modules do, loading nothing else of the package", {
    timeout: 2 * MINUTE,
  }, async () => {
    const line = (ip: string, s: number) =>
      `${ip} - - [03/Dec/2026:06:00:0${s} +0000] "POST /api/risk/simulation/studio/run HTTP/1.1" 200 1 "-" "t"`;
    const log = join(side, 'bundle-check.log');
    writeFileSync(
      log,
      Array.from({ length: 16 }, (_, i) => line(i % 5 ? '203.0.113.7' : '2001:db8::1', i % 10)).join('\n'),
    );
    const config = join(clone, 'packages/gateway/examples/rate-limits.yaml');
    const preload = join(ROOT, 'test/fixtures/record-loads.mjs');
    for (const command of [
      ['replay', '--json', '--config', config, log],
      ['recommend', '--json', log],
    ]) {
      const viaBundle = await run(
        'node',
        ['--import', preload, 'packages/gateway/bin/sluice.js', ...command],
        clone,
        MINUTE,
      );
      const viaModules = await ok('node', ['packages/gateway/dist/bin/sluice.js', ...command], clone, MINUTE);
      expect(viaBundle.code, viaBundle.out).toBe(0);
      const marker = viaBundle.out.lastIndexOf('LOADED ');
      const loaded = (JSON.parse(viaBundle.out.slice(marker + 7).split('\n')[0]) as string[])
        .filter((u) => u.startsWith('file:') && u.includes('/packages/'))
        .map((u) => u.slice(u.indexOf('/packages/') + 1));
      expect(loaded).toEqual([
        'packages/gateway/bin/sluice.js',
        'packages/gateway/dist/bin/log-commands.bundle.mjs',
        'packages/gateway/dist/config/schema-validator.cjs',
      ]);
      expect(JSON.parse(viaBundle.out.slice(0, marker))).toEqual(JSON.parse(viaModules));
    }
  });

  it('packs both packages with the license, a README and no tests', { timeout: 3 * MINUTE }, async () => {
    mkdirSync(packs);
    const out = await ok(
      'npm',
      ['pack', '--json', '--pack-destination', packs, '-w', 'packages/sluice', '-w', 'packages/gateway'],
      clone,
      2 * MINUTE,
    );
    const packed = JSON.parse(out.slice(out.indexOf('['))) as {
      name: string;
      filename: string;
      files: { path: string }[];
    }[];
    for (const p of packed) tarballs[p.name] = { filename: p.filename, files: p.files.map((f) => f.path) };
    expect(Object.keys(tarballs).sort()).toEqual(['@sluice/gateway', 'sluice']);
    for (const { files } of Object.values(tarballs)) {
      expect(files).toContain('LICENSE');
      expect(files).toContain('README.md');
      expect(files).toContain('package.json');
      expect(files.filter((f) => /\.test\.|(^|\/)test\//.test(f))).toEqual([]);
    }
    expect(tarballs['@sluice/gateway'].files).toContain('bin/sluice.js');
    expect(tarballs['@sluice/gateway'].files).toContain('dist/bin/sluice.js');
    expect(tarballs['@sluice/gateway'].files).toContain('dist/config/schema-validator.cjs');
    expect(tarballs['@sluice/gateway'].files).toContain('dist/bin/log-commands.bundle.mjs');
    expect(tarballs.sluice.files).toContain('dist/core/index.js');
    expect(tarballs.sluice.files).toContain('dist/core/index.d.ts');
    const license = readFileSync(join(ROOT, 'LICENSE'), 'utf8');
    expect(readFileSync(join(ROOT, 'packages/sluice/LICENSE'), 'utf8')).toBe(license);
    expect(readFileSync(join(ROOT, 'packages/gateway/LICENSE'), 'utf8')).toBe(license);
  });

  it('declares exactly the packages its shipped code imports', () => {
    for (const [folder, name] of [
      ['packages/sluice', 'sluice'],
      ['packages/gateway', '@sluice/gateway'],
    ]) {
      const manifest = JSON.parse(readFileSync(join(clone, folder, 'package.json'), 'utf8')) as {
        dependencies?: Record<string, string>;
        peerDependencies?: Record<string, string>;
      };
      const runtime = Object.keys(manifest.dependencies ?? {});
      const peers = Object.keys(manifest.peerDependencies ?? {});
      const imported = new Set<string>();
      for (const file of tarballs[name].files.filter((f) => f.endsWith('.js'))) {
        const text = readFileSync(join(clone, folder, file), 'utf8');
        for (const spec of importedSpecifiers(text)) {
          if (/^[./]/.test(spec) || spec.startsWith('node:') || builtinModules.includes(spec)) continue;
          imported.add(
            spec
              .split('/')
              .slice(0, spec.startsWith('@') ? 2 : 1)
              .join('/'),
          );
        }
      }
      // A dependency may also be there for a peer of another one (prom-client for sluice/prometheus).
      const peersOfDependencies = runtime.flatMap((d) => {
        const dep = JSON.parse(readFileSync(join(clone, 'node_modules', d, 'package.json'), 'utf8'));
        return Object.keys((dep as { peerDependencies?: object }).peerDependencies ?? {});
      });
      // Every import is declared; every runtime dependency is used (nothing installed for users in vain).
      expect(
        [...imported].filter((p) => !runtime.includes(p) && !peers.includes(p)),
        name,
      ).toEqual([]);
      expect(
        runtime.filter((d) => !imported.has(d) && !peersOfDependencies.includes(d)),
        name,
      ).toEqual([]);
    }
  });

  it('installs the sluice tarball alone: each entry point loads, or names the optional peer to install', {
    timeout: 5 * MINUTE,
  }, async () => {
    mkdirSync(consumer);
    writeFileSync(
      join(consumer, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true }, null, 2),
    );
    const tarball = join(packs, tarballs.sluice.filename);
    await ok(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball],
      consumer,
      4 * MINUTE,
    );
    const entries = [...Object.keys(ANCHORS).filter((e) => e.startsWith('sluice')), 'sluice/testing'];
    writeFileSync(
      join(consumer, 'alone.mjs'),
      `const peers = ${JSON.stringify(RUNTIME_PEERS)};
const report = {};
for (const entry of ${JSON.stringify(entries)}) {
  try {
    await import(entry);
    report[entry] = 'loaded';
  } catch (error) {
    const named = (peers[entry] ?? []).some((p) => String(error.message).includes("'" + p + "'"));
    const install = (peers[entry] ?? []).find((p) => String(error.message).endsWith('npm install ' + p));
    if (error.code === 'ERR_MISSING_PEER' && install) report[entry] = 'SluiceError: npm install ' + install;
    else report[entry] = named ? 'names ' + peers[entry].join(' or ') : String(error.message);
  }
}
console.log(JSON.stringify(report));
`,
    );
    const report = JSON.parse(await ok('node', ['alone.mjs'], consumer, MINUTE)) as Record<string, string>;
    const expected: Record<string, string> = {};
    for (const e of entries) {
      if (RUNTIME_PEERS[e] === undefined) expected[e] = 'loaded';
      else if (SLUICE_ERROR_PEERS.has(e)) expected[e] = `SluiceError: npm install ${RUNTIME_PEERS[e][0]}`;
      else expected[e] = `names ${RUNTIME_PEERS[e].join(' or ')}`;
    }
    expect(report).toEqual(expected);
  });

  it('installs the gateway tarball: its entry point and the sluice command work', {
    timeout: 5 * MINUTE,
  }, async () => {
    const tarball = join(packs, tarballs['@sluice/gateway'].filename);
    await ok(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball],
      consumer,
      4 * MINUTE,
    );
    writeFileSync(
      join(consumer, 'gateway.mjs'),
      "const m = await import('@sluice/gateway');\nconsole.log(typeof m.main);\n",
    );
    expect(await ok('node', ['gateway.mjs'], consumer, MINUTE)).toBe('function\n');
    expect(await ok('npm', ['exec', '--no', '--', 'sluice', '--help'], consumer, MINUTE)).toMatch(
      /sluice serve/,
    );
  });

  it('imports every entry point from ESM once the peers are installed', { timeout: 5 * MINUTE }, async () => {
    const peers = PEERS.map(locked);
    await ok(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', ...peers],
      consumer,
      4 * MINUTE,
    );
    writeFileSync(
      join(consumer, 'esm.mjs'),
      `import assert from 'node:assert/strict';
import { Limiter, ManualClock } from 'sluice';
import { MemoryStore } from 'sluice/memory';
const anchors = ${JSON.stringify(ANCHORS)};
for (const [entry, names] of Object.entries(anchors)) {
  const m = await import(entry);
  for (const name of names) assert.ok(name in m, entry + ' exports ' + name);
}
const clock = new ManualClock();
const limiter = new Limiter({ policies: [{ name: 'p', quota: 1, window: 60 }], store: new MemoryStore({ clock }) });
const first = await limiter.decide([{ policy: 'p', key: 'k' }]);
const second = await limiter.decide([{ policy: 'p', key: 'k' }]);
console.log(JSON.stringify([first.allowed, second.allowed]));
`,
    );
    expect(JSON.parse(await ok('node', ['esm.mjs'], consumer, MINUTE))).toEqual([true, false]);
  });

  it('requires every entry point from CommonJS (require of ES modules)', { timeout: MINUTE }, async () => {
    writeFileSync(
      join(consumer, 'cjs.cjs'),
      `const assert = require('node:assert/strict');
if (!process.features.require_module) {
  console.error('CommonJS programs need Node.js 20.19, 22.12 or newer to require sluice (an ES module).');
  process.exit(2);
}
const anchors = ${JSON.stringify(ANCHORS)};
for (const [entry, names] of Object.entries(anchors)) {
  const m = require(entry);
  for (const name of names) assert.ok(name in m, entry + ' exports ' + name);
}
console.log('ok');
`,
    );
    const r = await run('node', ['--no-warnings', 'cjs.cjs'], consumer, MINUTE);
    expect(r).toEqual({ code: 0, out: 'ok\n' });
  });

  it('type-checks ESM and CommonJS consumers with module nodenext', { timeout: 3 * MINUTE }, async () => {
    const imports = Object.entries(ANCHORS).map(([entry, names], i) => ({
      entry,
      name: names[0],
      alias: `a${i}`,
    }));
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          // The build already checked the declarations; this checks how a consumer resolves them.
          skipLibCheck: true,
          types: ['node'],
        },
        files: ['consumer.mts', 'consumer.cts'],
      }),
    );
    writeFileSync(
      join(consumer, 'consumer.mts'),
      `${imports.map((x) => `import { ${x.name} as ${x.alias} } from '${x.entry}';`).join('\n')}
import type { Decision, RateLimitStore } from 'sluice';
export const all: unknown[] = [${imports.map((x) => x.alias).join(', ')}];
export async function allowed(store: RateLimitStore): Promise<boolean> {
  const limiter = new a0({ policies: [{ name: 'p', quota: 1, window: 60 }], store });
  const d: Decision = await limiter.decide([{ policy: 'p', key: 'k' }]);
  return d.allowed;
}
`,
    );
    writeFileSync(
      join(consumer, 'consumer.cts'),
      `${imports.map((x) => `import ${x.alias} = require('${x.entry}');`).join('\n')}
export const all: unknown[] = [${imports.map((x) => `${x.alias}.${x.name}`).join(', ')}];
`,
    );
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const r = await run('node', [tsc, '-p', 'tsconfig.json'], consumer, 2 * MINUTE);
    expect(r).toEqual({ code: 0, out: '' });
  });

  // A clone on a newcomer's machine has no folder beside it. The copy's parent holds the copy alone from the start
  // of its unit suites to their end, so a suite that reads `../anything` of the repository fails here. The unit
  // project holds every suite that checks the requirements kept in test/fixtures/requirements/. It runs its files
  // in two processes (vitest.config.ts), under a minute, from the end of the install on, beside the steps above.
  it('tests itself with nothing beside it: the unit suites pass in the copy', {
    timeout: 7 * MINUTE,
  }, async () => {
    const r = await unitSuites;
    const out = stripVTControlCharacters(r.out);
    expect(besideAtStart).toEqual(['clone']);
    expect(readdirSync(work)).toEqual(['clone']);
    expect(r.code, out).toBe(0);
    for (const suite of ['config.test.ts', 'refill-config.test.ts', 'class-catalogue.test.ts']) {
      expect(out).toContain(`packages/gateway/test/${suite}`);
    }
    expect(out).toMatch(/Test Files\s+\d+ passed \(\d+\)/);
  });
});
