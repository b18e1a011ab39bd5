import { readFileSync } from 'node:fs';

/** The files of `test/fixtures/requirements/`, each a fact copied from a design document (see its README). */
export type RequirementFixture =
  | 'gateway-configuration.yaml'
  | 'token-bucket-block.yaml'
  | 'rate-limit-classes.txt';

/**
 * A requirement kept as a fact inside the repository, so that a clone tests itself with nothing beside it. The
 * folder's README says which design document and section each file comes from.
 *
 * @param name - the fixture's file name.
 * @returns the file's text, exactly as stored.
 */
export function requirementFixture(name: RequirementFixture): string {
  return readFileSync(new URL(`../fixtures/requirements/${name}`, import.meta.url), 'utf8');
}
