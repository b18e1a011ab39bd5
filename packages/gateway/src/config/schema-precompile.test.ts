import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { precompiledFor, validatorDigest } from './precompiled-validator.js';
import { schemaErrors, schemaText } from './schema.js';
import { precompiledValidatorSource } from './schema-precompile.js';

/** Runs a validator module's source as `require` would, resolving its runtime imports from this package. */
function load(source: string): unknown {
  const module = { exports: {} as unknown };
  new Function('module', 'exports', 'require', source)(
    module,
    module.exports,
    createRequire(import.meta.url),
  );
  return module.exports;
}

const text = schemaText();
const precompiled = precompiledFor(
  load(precompiledValidatorSource(text)),
  validatorDigest(text),
) as ValidateFunction;
const errorsOf = (data: unknown) => (precompiled(data) ? [] : [...(precompiled.errors ?? [])]);

const examples = new URL('../../examples/', import.meta.url);
const documents = readdirSync(examples)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => parse(readFileSync(new URL(f, examples), 'utf8')) as Record<string, unknown>);

/** Sets a value at a path of plain objects and arrays, creating objects where the path runs out. */
function setAt(doc: unknown, path: readonly string[], value: unknown): unknown {
  if (path.length === 0) return value;
  const base = typeof doc === 'object' && doc !== null ? doc : {};
  const copy: Record<string, unknown> = Array.isArray(base) ? ([...base] as never) : { ...base };
  copy[path[0]] = setAt((base as Record<string, unknown>)[path[0]], path.slice(1), value);
  return copy;
}

/** The paths of a document's values, for mutations that land where the schema has something to say. */
function pathsOf(doc: unknown, at: string[] = [], out: string[][] = []): string[][] {
  out.push(at);
  if (typeof doc === 'object' && doc !== null) {
    for (const [k, v] of Object.entries(doc)) pathsOf(v, [...at, k], out);
  }
  return out;
}

describe('the precompiled configuration validator', () => {
  it('answers the example configurations as the schema compiled at run time does (no errors)', () => {
    expect(documents.length).toBeGreaterThan(0);
    for (const d of documents) {
      expect(errorsOf(d)).toEqual([]);
      expect(schemaErrors(d)).toEqual([]);
    }
  });

  it('gives exactly the errors of the run-time compiled schema for any document changed anywhere', () => {
    const paths = documents.map((d) => pathsOf(d));
    fc.assert(
      fc.property(
        fc.nat(documents.length - 1),
        fc.array(
          fc.record({
            at: fc.nat(),
            extra: fc.array(fc.constantFrom('extra', 'limit', 'window', 'burst', '0', 'pattern'), {
              maxLength: 2,
            }),
            value: fc.jsonValue({ maxDepth: 2 }),
          }),
          { minLength: 1, maxLength: 4 },
        ),
        (which, changes) => {
          let doc: unknown = documents[which];
          for (const c of changes) {
            const all = paths[which];
            doc = setAt(doc, [...all[c.at % all.length], ...c.extra], c.value);
          }
          expect(errorsOf(doc)).toEqual(schemaErrors(doc));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('answers only for the schema it was compiled from', () => {
    const module = load(precompiledValidatorSource(text));
    expect(precompiledFor(module, validatorDigest(text))).toBeTypeOf('function');
    // A tree whose schema changed after its build compiles the schema in force instead.
    expect(precompiledFor(module, validatorDigest(`${text} `))).toBeUndefined();
    expect(precompiledFor({ schemaDigest: validatorDigest(text) }, validatorDigest(text))).toBeUndefined();
  });
});
