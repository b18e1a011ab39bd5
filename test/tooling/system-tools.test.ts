import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  findTool,
  INSTALL_COMMAND,
  isOptedOut,
  missingTools,
  missingToolsMessage,
  SYSTEM_TOOLS,
  systemTool,
} from '../../scripts/system-tools.mjs';
import { OptOutReporter } from '../support/opt-out-reporter.js';
import { sortSuites, testFiles, toolsOf } from '../support/suite-kinds.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sluice-tools-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Source text calling `name`, built at run time: vitest.config.ts reads this file's text to sort it, and literal
 * calls of the starters here would make it a suite that starts them.
 */
function call(name: string, args = ''): string {
  return `${name}(${args});`;
}

/** An executable file named `name` in a fresh folder, to stand in for a program on PATH. */
function fakeProgram(name: string): string {
  const folder = mkdtempSync(join(dir, 'bin-'));
  const file = join(folder, name);
  writeFileSync(file, '#!/bin/sh\n');
  chmodSync(file, 0o755);
  return folder;
}

describe('the system tool table', () => {
  it('names each program with its Debian package and an opt-out variable', () => {
    expect(SYSTEM_TOOLS.map((t) => [t.name, t.apt])).toEqual([
      ['redis-server', 'redis-server'],
      ['redis-cli', 'redis-tools'],
      ['chromium', 'chromium'],
      ['promtool', 'prometheus'],
      ['prometheus', 'prometheus'],
      ['nginx', 'nginx'],
      ['openssl', 'openssl'],
      ['podman', 'podman'],
      ['runc', 'runc'],
    ]);
    for (const t of SYSTEM_TOOLS) expect(t.optOut).toMatch(/^SLUICE_SKIP_[A-Z]+$/);
    expect(() => systemTool('ngnix')).toThrow(/unknown system tool "ngnix": expected one of redis-server, /);
  });

  it('finds a program on PATH, in an sbin folder, or where its variable says', () => {
    const folder = fakeProgram('nginx');
    expect(findTool('nginx', { PATH: folder })).toBe(join(folder, 'nginx'));
    expect(findTool('nginx', { PATH: '/nonexistent', NGINX_BIN: join(folder, 'nginx') })).toBe(
      join(folder, 'nginx'),
    );
    expect(findTool('nginx', { PATH: folder, NGINX_BIN: join(dir, 'missing') })).toBeUndefined();
    const valkey = fakeProgram('valkey-server');
    expect(findTool('redis-server', { PATH: valkey, REDIS_SERVER_BIN: 'valkey-server' })).toBe(
      join(valkey, 'valkey-server'),
    );
    expect(findTool('chromium', { PATH: dir })).toBeUndefined();
  });

  it('reads an opt-out variable as set unless empty, 0 or false', () => {
    expect(isOptedOut('nginx', {})).toBe(false);
    for (const off of ['', '0', 'false', 'FALSE'])
      expect(isOptedOut('nginx', { SLUICE_SKIP_NGINX: off })).toBe(false);
    for (const on of ['1', 'true', 'yes']) expect(isOptedOut('nginx', { SLUICE_SKIP_NGINX: on })).toBe(true);
    expect(isOptedOut('promtool', { SLUICE_SKIP_PROMETHEUS: '1' })).toBe(true);
  });

  it('lists what is missing and not opted out, and names the one command that installs it', () => {
    const env = { PATH: fakeProgram('openssl'), SLUICE_SKIP_BROWSER: '1' };
    const missing = missingTools(env).map((t) => t.name);
    expect(missing).toContain('redis-cli'); // in /usr/bin, which this PATH lacks
    expect(missing).not.toContain('chromium'); // opted out
    expect(missing).not.toContain('openssl'); // on PATH
    const text = missingToolsMessage([systemTool('nginx'), systemTool('promtool'), systemTool('prometheus')]);
    expect(text).toContain('missing: nginx, promtool, prometheus.');
    expect(text).toContain('Debian packages nginx, prometheus');
    expect(text).toContain(`\n  ${INSTALL_COMMAND}\n`);
    expect(text).toContain('SLUICE_SKIP_NGINX=1 SLUICE_SKIP_PROMETHEUS=1 npm test');
    expect(INSTALL_COMMAND).toBe('sudo bash scripts/system-deps.sh');
  });

  it('is the one installer of .ci/run and of the pre-step of npm test', () => {
    const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8');
    expect(ci).toContain('bash scripts/system-deps.sh');
    expect(ci).not.toMatch(/apt-get/);
    const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts as Record<
      string,
      string
    >;
    expect(scripts['test:main-line']).toMatch(/^node scripts\/ensure-install\.mjs --tools && /);
  });
});

describe('sorting the suites', () => {
  it('reads the programs a suite starts from its calls of toolPath and of the starters', () => {
    expect([...toolsOf(call('toolPath', "'chromium'"))]).toEqual(['chromium']);
    expect([...toolsOf(call('startRedisServer'))].sort()).toEqual(['redis-cli', 'redis-server']);
    expect([...toolsOf(call('promtool', "['check', 'rules', f]"))]).toEqual(['promtool']);
    expect([...toolsOf(call('startNginx', 'conf, port'))]).toEqual(['nginx']);
    expect([...toolsOf(call('makeCertificates', 'dir'))]).toEqual(['openssl']);
    expect([...toolsOf("import { freePort } from './redis-server.js';")]).toEqual([]);
    expect(() => toolsOf(call('toolPath', "'chromium-browser'"))).toThrow(/unknown system tool/);
  });

  it('puts end-to-end, browser and program-starting suites in the system project, minus the opted-out', () => {
    const tree = mkdtempSync(join(dir, 'tree-'));
    const put = (file: string, text: string) => {
      const full = join(tree, file);
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, text);
    };
    put('packages/a/src/math.test.ts', 'expect(1).toBe(1);');
    put('packages/a/src/store.test.ts', call('startRedisServer'));
    put('packages/a/test/proxy.e2e.test.ts', 'listen();');
    put('packages/a/test/page.browser.test.ts', call('toolPath', "'chromium'"));
    put('packages/b/test/auth.e2e.test.ts', call('startNginx', 'c, 1'));
    put('test/rules.test.ts', call('promtool', "['check']"));
    put('packages/a/node_modules/x/y.test.ts', 'never read');
    expect(testFiles(tree)).toEqual([
      'packages/a/src/math.test.ts',
      'packages/a/src/store.test.ts',
      'packages/a/test/page.browser.test.ts',
      'packages/a/test/proxy.e2e.test.ts',
      'packages/b/test/auth.e2e.test.ts',
      'test/rules.test.ts',
    ]);
    const kinds = sortSuites(tree, { SLUICE_SKIP_NGINX: '1', SLUICE_SKIP_REDIS: '1' });
    expect(kinds.system).not.toContain('packages/a/src/math.test.ts');
    expect(kinds.system).toHaveLength(5);
    expect(kinds.systemToRun).toEqual([
      'packages/a/test/page.browser.test.ts',
      'packages/a/test/proxy.e2e.test.ts',
      'test/rules.test.ts',
    ]);
    expect(kinds.optedOut).toEqual([
      { file: 'packages/a/src/store.test.ts', variables: ['SLUICE_SKIP_REDIS'] },
      { file: 'packages/b/test/auth.e2e.test.ts', variables: ['SLUICE_SKIP_NGINX'] },
    ]);
  });

  it('ends the run with the opted-out suites, and says nothing when none is', () => {
    const lines: string[] = [];
    const logger = { log: (text: string) => lines.push(text) };
    const vitest = { logger, projects: [{ name: 'unit' }, { name: 'system' }] } as never;
    const quiet = new OptOutReporter([], 'system');
    quiet.onInit(vitest);
    quiet.onTestRunEnd();
    expect(lines).toEqual([]);
    const reporter = new OptOutReporter(
      [{ file: 'packages/b/test/auth.e2e.test.ts', variables: ['SLUICE_SKIP_NGINX'] }],
      'system',
    );
    reporter.onInit(vitest);
    reporter.onTestRunEnd();
    expect(lines.join('\n')).toContain('opted out: 1 suite not run');
    expect(lines.join('\n')).toContain('packages/b/test/auth.e2e.test.ts  (SLUICE_SKIP_NGINX)');
  });
});

describe('the suites of this repository', () => {
  const files = testFiles(ROOT);

  it('never skip themselves when a program is missing, and find programs through toolPath', () => {
    const offenders: string[] = [];
    const program = '(redis-server|redis-cli|chromium|promtool|prometheus|nginx|openssl)';
    const direct = new RegExp(`(spawn|spawnSync|execFile|execFileSync|exec|execSync)\\(\\s*'${program}'`);
    for (const file of files) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      if (/\.skipIf\(\s*!?\s*existsSync/.test(text))
        offenders.push(`${file}: skips itself when a file is missing`);
      if (/'\/usr\/s?bin\//.test(text)) offenders.push(`${file}: a fixed /usr/bin or /usr/sbin path`);
      if (direct.test(text)) offenders.push(`${file}: starts a program by name instead of toolPath()`);
    }
    expect(offenders).toEqual([]);
  });

  it('sort the program-starting suites out of the unit project', () => {
    const kinds = sortSuites(ROOT, {});
    for (const file of [
      'packages/gateway/test/nginx-auth-request.e2e.test.ts',
      'packages/sluice/src/redis/redis-store.test.ts',
      'packages/sluice/src/client/status-element.browser.test.ts',
      'test/prometheus/alert-rules.test.ts',
    ]) {
      expect(kinds.system).toContain(file);
    }
    expect(kinds.system).not.toContain('packages/sluice/src/core/limiter.test.ts');
    expect(kinds.system).not.toContain('packages/sluice/src/prometheus/prometheus-metrics.test.ts');
  });
});
