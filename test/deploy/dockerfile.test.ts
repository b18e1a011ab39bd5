/**
 * The Dockerfile's shape, which the container suite relies on: it builds the `prebuilt` target, so that target
 * must differ from the default one only in where /opt/sluice comes from. Read as text, no engine needed.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dockerfile = readFileSync(`${ROOT}Dockerfile`, 'utf8');

/** The instructions of each stage (continuation lines joined, comments dropped), by stage name. */
function stages(text: string): Map<string, { from: string; lines: string[] }> {
  const out = new Map<string, { from: string; lines: string[] }>();
  let current: { from: string; lines: string[] } | undefined;
  const logical = text
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  for (const line of logical) {
    const from = /^FROM\s+(\S+)\s+AS\s+(\S+)$/i.exec(line);
    if (from !== null) {
      current = { from: from[1], lines: [] };
      out.set(from[2], current);
    } else current?.lines.push(line);
  }
  return out;
}

describe('Dockerfile', () => {
  const s = stages(dockerfile);

  it('builds on a Node.js 24 slim base named by NODE_IMAGE, the default target last', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=docker\.io\/library\/node:24-bookworm-slim$/m);
    expect([...s.keys()]).toEqual(['build', 'runtime-base', 'prebuilt', 'runtime']);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's own argument reference, as written.
    const nodeImage = '${NODE_IMAGE}';
    expect(s.get('build')?.from).toBe(nodeImage);
    expect(s.get('runtime-base')?.from).toBe(nodeImage);
  });

  it('gives both targets every setting of runtime-base and differs only in the source of /opt/sluice', () => {
    expect(s.get('prebuilt')).toEqual({ from: 'runtime-base', lines: ['COPY image-app/ /opt/sluice/'] });
    expect(s.get('runtime')).toEqual({
      from: 'runtime-base',
      lines: ['COPY --from=build /opt/sluice/ /opt/sluice/'],
    });
    const base = s.get('runtime-base')?.lines ?? [];
    expect(base).toContain('USER 1000:1000');
    expect(base).toContain('ENTRYPOINT ["sluice"]');
    expect(base).toContain('CMD ["serve", "--config", "/etc/sluice/rate-limits.yaml"]');
    expect(base).toContain('STOPSIGNAL SIGTERM');
    expect(base.some((l) => l.startsWith('HEALTHCHECK ') && l.includes('CMD ["node"'))).toBe(true);
    // No RUN at run time: the runtime needs no shell, and the dependencies come only from the build stage.
    expect(base.filter((l) => l.startsWith('RUN '))).toEqual([]);
  });

  it('builds with the locked dependencies and ships none of the dev ones', () => {
    const build = s.get('build')?.lines ?? [];
    expect(build.some((l) => /^RUN .*npm ci$/.test(l))).toBe(true);
    expect(
      build.some((l) => l.includes('npm run build') && l.includes('scripts/image-app.mjs /opt/sluice')),
    ).toBe(true);
    expect(readFileSync(`${ROOT}scripts/image-app.mjs`, 'utf8')).toContain("'--omit=dev'");
  });

  it('keeps what the build makes again out of the context, and the prebuilt folder in', () => {
    const ignored = readFileSync(`${ROOT}.dockerignore`, 'utf8')
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining(['**/node_modules', '**/dist', '.git']));
    expect(ignored.some((l) => l.startsWith('image-app'))).toBe(false);
  });
});
