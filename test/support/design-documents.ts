import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The design documents behind Sluice, beside the repository in `../shared/seeds/` (where every clone, CI's too,
 * finds them). Tests that check a document's example as written read it from there; a missing file fails loudly.
 *
 * @param name - the file name, for example `002_af99412070ec6474.txt`.
 */
export function designDocument(name: string): string {
  const path = fileURLToPath(new URL(`../../../shared/seeds/${name}`, import.meta.url));
  if (!existsSync(path)) {
    throw new Error(
      `the design document ${name} is missing: expected at ${path} (shared/seeds beside the repository)`,
    );
  }
  return readFileSync(path, 'utf8');
}
