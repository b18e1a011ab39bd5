import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * Bundles a browser entry with esbuild for the `browser` platform: a Node built-in anywhere in the client's import
 * graph fails the build, so the bundle doubles as a portability check.
 *
 * @returns the bundle's source (an IIFE unless `format` says `esm`).
 */
export async function bundleForBrowser(entry: URL, format: 'iife' | 'esm' = 'iife'): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(entry)],
    bundle: true,
    format,
    platform: 'browser',
    target: 'chrome120',
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0].text;
}
