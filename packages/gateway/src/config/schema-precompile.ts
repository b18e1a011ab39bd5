import { Ajv } from 'ajv';
import standalone from 'ajv/dist/standalone/index.js';
import { SCHEMA_VALIDATOR_OPTIONS, validatorDigest } from './precompiled-validator.js';

/**
 * The source of the precompiled validator of a schema text: a CommonJS module exporting the validate function
 * (ajv's standalone code, compiled with {@link SCHEMA_VALIDATOR_OPTIONS}) and `schemaDigest`, the
 * {@link validatorDigest} of the text, by which `schemaErrors` tells whether it still answers for the schema in
 * force. The build writes it as `dist/config/schema-validator.cjs`.
 *
 * @param text - the schema file's text.
 * @returns the module's source.
 * @throws the compiler's error when the text is no valid schema.
 */
export function precompiledValidatorSource(text: string): string {
  const ajv = new Ajv({ ...SCHEMA_VALIDATOR_OPTIONS, code: { source: true } });
  const validate = ajv.compile(JSON.parse(text));
  return (
    '// Written by the build from schema/rate-limits.schema.json (src/config/schema-precompile.ts); do not edit.\n' +
    `${standalone.default(ajv, validate)}\n` +
    `module.exports.schemaDigest = ${JSON.stringify(validatorDigest(text))};\n`
  );
}
