import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import {
  PRECOMPILED_VALIDATOR_FILE,
  precompiledFor,
  SCHEMA_VALIDATOR_OPTIONS,
  validatorDigest,
} from './precompiled-validator.js';

/**
 * The published JSON Schema of the configuration file (packages/gateway/schema/rate-limits.schema.json). The
 * gateway validates with the very file editors use, so the two cannot drift. The path is the same from `src/`
 * and from `dist/`, two levels below the package.
 */
export const SCHEMA_URL = new URL('../../schema/rate-limits.schema.json', import.meta.url);

const require = createRequire(import.meta.url);
let compiled: ValidateFunction | undefined;

/** The schema file's text. */
export function schemaText(): string {
  return readFileSync(SCHEMA_URL, 'utf8');
}

/** The schema as an object. */
export function configSchema(): Record<string, unknown> {
  return JSON.parse(schemaText()) as Record<string, unknown>;
}

function loadValidator(): ValidateFunction {
  const text = schemaText();
  let module: unknown;
  try {
    // Through `../config/`: the same file from this module and from the log commands' bundle in `dist/bin/`
    // (D-G63); a path in a variable, which the bundler leaves to run time.
    const file = `../config/${PRECOMPILED_VALIDATOR_FILE}`;
    module = require(file);
  } catch (e) {
    // Running from the sources (tests, tsx) there is none; anything else wrong with the file is an error.
    if ((e as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw e;
  }
  const ready = module === undefined ? undefined : precompiledFor(module, validatorDigest(text));
  if (ready !== undefined) return ready;
  const { Ajv } = require('ajv') as typeof import('ajv');
  return new Ajv({ ...SCHEMA_VALIDATOR_OPTIONS }).compile(JSON.parse(text));
}

/**
 * Validates data against the schema, loaded once per process: the build's precompiled validator when it was
 * compiled from this very schema with these options and this ajv, else the schema compiled now (the same errors).
 *
 * @returns every schema error (each carries its parent schema for suggestions).
 */
export function schemaErrors(data: unknown): ErrorObject[] {
  compiled ??= loadValidator();
  return compiled(data) ? [] : [...(compiled.errors ?? [])];
}
