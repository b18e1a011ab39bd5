/**
 * Podman for the container suites: every command runs with a containers.conf of its own (cgroupfs, the runc
 * runtime, no default ulimits, events in a file), which is what podman 4.3 needs on machines without systemd, and
 * the containers a suite starts carry one label so that `removeAll` ends exactly those. No container registry is
 * reachable from the test machines, so {@link testNodeImage} makes the Node.js 24 base image itself from npm's
 * `node` package and the libraries its binary links, and the suites pass it to the Dockerfile as `NODE_IMAGE`.
 *
 * @example
 * ```ts
 * const podman = new Podman(toolPath('podman'), toolPath('runc'));
 * const base = await testNodeImage(podman, nodeBinary);
 * ```
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What one podman command printed, and its exit code. */
export interface PodmanResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** One podman with its own configuration file; `dispose` removes the suite's containers and the file. */
export class Podman {
  readonly #dir: string;
  readonly #env: NodeJS.ProcessEnv;
  /** The label value on every container this instance starts. */
  readonly label: string;

  /**
   * @param bin - the podman binary (`toolPath('podman')`).
   * @param runc - the runc binary (`toolPath('runc')`): podman 4.3's default, crun, is not what these machines run.
   */
  constructor(
    readonly bin: string,
    runc: string,
  ) {
    this.#dir = mkdtempSync(join(tmpdir(), 'sluice-podman-'));
    const conf = join(this.#dir, 'containers.conf');
    writeFileSync(
      conf,
      [
        '[containers]',
        'default_ulimits = []',
        '[engine]',
        'cgroup_manager = "cgroupfs"',
        'events_logger = "file"',
        'runtime = "runc"',
        '[engine.runtimes]',
        `runc = [${JSON.stringify(runc)}]`,
        '',
      ].join('\n'),
    );
    this.#env = { ...process.env, CONTAINERS_CONF: conf };
    this.label = `sluice-test=${process.pid}-${Date.now()}`;
  }

  /** Runs `podman args...`; never throws for a non-zero exit (the result carries the code). */
  run(args: readonly string[], timeoutMs = 120_000): Promise<PodmanResult> {
    return new Promise((resolve, reject) => {
      execFile(
        this.bin,
        args,
        { env: this.#env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
        (error, stdout, stderr) => {
          if (error && typeof error.code !== 'number') reject(error);
          else resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
        },
      );
    });
  }

  /** Runs `podman args...` and returns its standard output; throws with the command and its output on failure. */
  async ok(args: readonly string[], timeoutMs?: number): Promise<string> {
    const r = await this.run(args, timeoutMs);
    if (r.code !== 0) {
      throw new Error(`podman ${args.join(' ')} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
    }
    return r.stdout;
  }

  /** Starts a detached container with the suite's label; returns its id. */
  async start(args: readonly string[]): Promise<string> {
    return (await this.ok(['run', '-d', '--label', this.label, ...args])).trim();
  }

  /** Removes every container this instance started, running or not, and the configuration file. */
  async dispose(): Promise<void> {
    const ids = (await this.run(['ps', '-aq', '--filter', `label=${this.label}`])).stdout.split('\n');
    const live = ids.map((id) => id.trim()).filter((id) => id !== '');
    if (live.length > 0) await this.run(['rm', '-f', '-t', '0', ...live]);
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** The shared libraries a binary links (ldd), with the dynamic loader: what a rootfs needs to run it. */
function linkedLibraries(binary: string): string[] {
  const out = execFileSync('ldd', [binary], { encoding: 'utf8' });
  const libs: string[] = [];
  for (const line of out.split('\n')) {
    const m = /=>\s+(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m !== null) libs.push(m[1]);
  }
  return libs;
}

/**
 * A Node.js base image made from `node` (npm's `node` package binary) and the libraries it and `/usr/bin/env` (the
 * shebang of the `sluice` launcher) link, with the official image's `node` user (1000) and a `/tmp`. Tagged by
 * the Node.js version and kept, so a second run imports nothing.
 *
 * @returns the image name to pass as `--build-arg NODE_IMAGE=...`.
 */
export async function testNodeImage(podman: Podman, node: string): Promise<string> {
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const tag = `localhost/sluice-test-node:${version.replace(/^v/, '')}`;
  if ((await podman.run(['image', 'exists', tag])).code === 0) return tag;
  const root = mkdtempSync(join(tmpdir(), 'sluice-rootfs-'));
  try {
    const copy = (from: string, to: string) => {
      mkdirSync(join(root, to, '..'), { recursive: true });
      execFileSync('cp', ['-L', from, join(root, to)]);
    };
    copy(node, 'usr/local/bin/node');
    copy('/usr/bin/env', 'usr/bin/env');
    for (const lib of new Set([...linkedLibraries(node), ...linkedLibraries('/usr/bin/env')])) copy(lib, lib);
    mkdirSync(join(root, 'tmp'), { mode: 0o1777 });
    execFileSync('chmod', ['1777', join(root, 'tmp')]);
    mkdirSync(join(root, 'home/node'), { recursive: true });
    execFileSync('chown', ['1000:1000', join(root, 'home/node')]);
    mkdirSync(join(root, 'etc'), { recursive: true });
    writeFileSync(
      join(root, 'etc/passwd'),
      'root:x:0:0:root:/root:/sbin/nologin\nnode:x:1000:1000::/home/node:/sbin/nologin\n',
    );
    writeFileSync(join(root, 'etc/group'), 'root:x:0:\nnode:x:1000:\n');
    const tar = join(tmpdir(), `sluice-rootfs-${process.pid}.tar`);
    execFileSync('tar', ['-C', root, '-cf', tar, '.']);
    try {
      await podman.ok(['import', '--change', 'ENV PATH=/usr/local/bin:/usr/bin:/bin', tar, tag]);
    } finally {
      rmSync(tar, { force: true });
    }
    return tag;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
