import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

/**
 * The published JSON Schema of the configuration file (packages/gateway/schema/rate-limits.schema.json). The
 * gateway validates with the very file editors use, so the two cannot drift. The path is the same from `src/`
 * and from `dist/`, two levels below the package.
 */
export const SCHEMA_URL = new URL('../../schema/rate-limits.schema.json', import.meta.url);

let compiled: ValidateFunction | undefined;

/** The schema as an object. */
export function configSchema(): Record<string, unknown> {
  return JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as Record<string, unknown>;
}

/**
 * Validates data against the schema, compiled once per process.
 *
 * @returns every schema error (ajv runs with `allErrors` and `verbose`, so each carries its parent schema for
 * suggestions).
 */
export function schemaErrors(data: unknown): ErrorObject[] {
  if (compiled === undefined) {
    const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, allowUnionTypes: true });
    compiled = ajv.compile(configSchema());
  }
  return compiled(data) ? [] : [...(compiled.errors ?? [])];
}
