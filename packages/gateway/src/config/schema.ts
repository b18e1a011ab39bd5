import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ErrorObject, Options, ValidateFunction } from 'ajv';

/**
 * The published JSON Schema of the configuration file (packages/gateway/schema/rate-limits.schema.json). The
 * gateway validates with the very file editors use, so the two cannot drift. The path is the same from `src/`
 * and from `dist/`, two levels below the package.
 */
export const SCHEMA_URL = new URL('../../schema/rate-limits.schema.json', import.meta.url);

/**
 * How the schema is compiled, at run time and by the build's precompiled validator alike: every error
 * (`allErrors`), each with its parent schema for suggestions (`verbose`).
 */
export const SCHEMA_VALIDATOR_OPTIONS: Readonly<Options> = Object.freeze({
  allErrors: true,
  verbose: true,
  strict: true,
  allowUnionTypes: true,
});

/**
 * The file name of the validator the build compiles ahead of time, beside this module in `dist/config/`
 * (`npm run build`). Compiling the schema takes about a tenth of a second, most of the start-up of `sluice
 * validate` and `sluice replay`; the precompiled module loads in a few milliseconds.
 */
export const PRECOMPILED_VALIDATOR_FILE = 'schema-validator.cjs';

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

/** The SHA-256 of a schema text: a precompiled validator answers only for the schema it was compiled from. */
export function schemaDigest(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * A validator module as the build writes it: the validate function, and the digest of the schema compiled.
 *
 * @param module - what `require` returned for the file.
 * @param digest - the digest of the schema in force.
 * @returns the validate function, or `undefined` when the module was compiled from another schema (a tree edited
 *   since its build).
 */
export function precompiledFor(module: unknown, digest: string): ValidateFunction | undefined {
  const m = module as { default?: unknown; schemaDigest?: unknown };
  return m.schemaDigest === digest && typeof m.default === 'function'
    ? (m.default as ValidateFunction)
    : undefined;
}

function loadValidator(): ValidateFunction {
  const text = schemaText();
  let module: unknown;
  try {
    module = require(`./${PRECOMPILED_VALIDATOR_FILE}`);
  } catch (e) {
    // Running from the sources (tests, tsx) there is none; anything else wrong with the file is an error.
    if ((e as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw e;
  }
  const ready = module === undefined ? undefined : precompiledFor(module, schemaDigest(text));
  if (ready !== undefined) return ready;
  const { Ajv } = require('ajv') as typeof import('ajv');
  return new Ajv({ ...SCHEMA_VALIDATOR_OPTIONS }).compile(JSON.parse(text));
}

/**
 * Validates data against the schema, loaded once per process: the build's precompiled validator when it was
 * compiled from this very schema, else the schema compiled now (the same options, the same errors).
 *
 * @returns every schema error (each carries its parent schema for suggestions).
 */
export function schemaErrors(data: unknown): ErrorObject[] {
  compiled ??= loadValidator();
  return compiled(data) ? [] : [...(compiled.errors ?? [])];
}
