/**
 * Writes the precompiled configuration validator into the build (`dist/config/schema-validator.cjs`), so that
 * the `sluice` command loads it instead of compiling the schema at every start. Part of `npm run build`.
 *
 *   tsx packages/gateway/scripts/build-schema-validator.ts [OUT_FILE]
 */
import { renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PRECOMPILED_VALIDATOR_FILE, schemaText } from '../src/config/schema.js';
import { precompiledValidatorSource } from '../src/config/schema-precompile.js';

const out =
  process.argv[2] ?? fileURLToPath(new URL(`../dist/config/${PRECOMPILED_VALIDATOR_FILE}`, import.meta.url));
// Written beside and renamed into place: a command starting meanwhile never loads half a file.
writeFileSync(`${out}.tmp`, precompiledValidatorSource(schemaText()));
renameSync(`${out}.tmp`, out);
console.log(`configuration validator: ${out}`);
