import { type Document, isScalar, isSeq, type Scalar, visit, type YAMLSeq } from 'yaml';
import type { ConfigPath } from './violation.js';

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const WHOLE = /^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$/;

/** An `${ENV}` reference that has no value and no default. */
export interface MissingVariable {
  readonly path: ConfigPath;
  readonly name: string;
  readonly node: Scalar;
}

/**
 * Replaces `${NAME}` and `${NAME:-default}` in every string scalar of the document, in place, so that secrets
 * and URLs stay out of the file while line positions stay exact for error messages. `$${...}` is left as a
 * literal `${...}`. A plain (unquoted) scalar that is exactly one reference takes the type of its value, so
 * `port: ${PORT}` gives a number; a quoted one stays a string.
 *
 * @param doc - the parsed document, changed in place.
 * @param env - the variables, usually `process.env`.
 * @returns the references that had neither a value nor a default.
 */
export function substituteEnv(
  doc: Document,
  env: Readonly<Record<string, string | undefined>>,
): MissingVariable[] {
  const missing: MissingVariable[] = [];
  visit(doc, {
    Scalar(_key, node, ancestry) {
      if (typeof node.value !== 'string' || !node.value.includes('${')) return;
      const source = node.value;
      const path = pathOf(ancestry, node);
      const escaped = source.split('$${');
      const replaced = escaped
        .map((part, i) => {
          const body = i === 0 ? part : `{${part}`;
          const out = body.replace(REFERENCE, (_m, name: string, fallback: string | undefined) => {
            const v = env[name];
            if (v !== undefined && v !== '') return v;
            if (fallback !== undefined) return fallback;
            missing.push({ path, name, node });
            return '';
          });
          return i === 0 ? out : `$${out}`;
        })
        .join('');
      if (WHOLE.test(source) && node.type === 'PLAIN') node.value = plainValue(replaced);
      else node.value = replaced;
    },
  });
  return missing;
}

function plainValue(text: string): unknown {
  if (/^-?[0-9]+(\.[0-9]+)?$/.test(text)) return Number(text);
  if (text === 'true') return true;
  if (text === 'false') return false;
  return text;
}

function pathOf(ancestry: readonly unknown[], node: unknown): (string | number)[] {
  const out: (string | number)[] = [];
  for (let i = 0; i < ancestry.length; i++) {
    const a = ancestry[i];
    const next = i + 1 < ancestry.length ? ancestry[i + 1] : node;
    if (isPairLike(a)) {
      const k = (a as { key: unknown }).key;
      out.push(isScalar(k) ? String(k.value) : String(k));
    } else if (isSeq(a)) {
      out.push((a as YAMLSeq).items.indexOf(next));
    }
  }
  return out;
}

function isPairLike(v: unknown): boolean {
  return typeof v === 'object' && v !== null && 'key' in v && 'value' in v && !('items' in v);
}
