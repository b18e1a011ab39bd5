import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Options, ValidateFunction } from 'ajv';

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
 * The file name of the validator the build compiles ahead of time, beside the schema module in `dist/config/`
 * (`npm run build`). Compiling the schema takes about a tenth of a second, most of the start-up of `sluice
 * validate` and `sluice replay`; the precompiled module loads in a few milliseconds.
 */
export const PRECOMPILED_VALIDATOR_FILE = 'schema-validator.cjs';

const require = createRequire(import.meta.url);

/**
 * What a precompiled validator answers for: the schema text, the compiler's options and the ajv version that
 * compiled it, as a SHA-256. A build older than any of the three is ignored, never used.
 *
 * @param text - the schema file's text.
 * @returns the digest, hex.
 */
export function validatorDigest(text: string): string {
  const ajv = (require('ajv/package.json') as { version: string }).version;
  return createHash('sha256')
    .update(`${ajv}\n${JSON.stringify(SCHEMA_VALIDATOR_OPTIONS)}\n${text}`)
    .digest('hex');
}

/**
 * A validator module as the build writes it: the validate function, and the digest of what compiled it.
 *
 * @param module - what `require` returned for the file.
 * @param digest - the {@link validatorDigest} in force.
 * @returns the validate function, or `undefined` when the module answers for another schema, other options or
 *   another ajv (a tree changed since its build).
 */
export function precompiledFor(module: unknown, digest: string): ValidateFunction | undefined {
  const m = module as { default?: unknown; schemaDigest?: unknown };
  return m.schemaDigest === digest && typeof m.default === 'function'
    ? (m.default as ValidateFunction)
    : undefined;
}
