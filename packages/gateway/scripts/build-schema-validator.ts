/**
 * Writes the precompiled configuration validator into the build (`dist/config/schema-validator.cjs`), so that
 * the `sluice` command loads it instead of compiling the schema at every start. Part of `npm run build`.
 *
 *   tsx packages/gateway/scripts/build-schema-validator.ts [OUT_FILE]
 */
import { renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PRECOMPILED_VALIDATOR_FILE } from '../src/config/precompiled-validator.js';
import { schemaText } from '../src/config/schema.js';
import { precompiledValidatorSource } from '../src/config/schema-precompile.js';

const out =
  process.argv[2] ?? fileURLToPath(new URL(`../dist/config/${PRECOMPILED_VALIDATOR_FILE}`, import.meta.url));
// Written beside and renamed into place: a command starting meanwhile never loads half a file, and two builds at
// once (a benchmark building beside a test) each rename their own.
const tmp = `${out}.${process.pid}.tmp`;
writeFileSync(tmp, precompiledValidatorSource(schemaText()));
renameSync(tmp, out);
console.log(`configuration validator: ${out}`);
