import { type Document, isMap, isPair, isScalar, isSeq } from 'yaml';
import type { ConfigPath } from './violation.js';

/*
 * Names the operator chooses (tiers, policy classes, tenants, endpoint rule names) become keys of JavaScript
 * objects somewhere between the file and a decision. A name that every object already has (`constructor`,
 * `toString`) reads as defined where it is not, and `__proto__` is not even kept as a key when YAML becomes data:
 * `tiers: {__proto__: ...}` read as no tier at all. These names are refused wherever they appear, with the
 * position of the key.
 */

const RESERVED: ReadonlySet<string> = new Set([...Object.getOwnPropertyNames(Object.prototype), '__proto__']);

/** Whether a name is a property every JavaScript object has, such as `constructor` or `__proto__`. */
export function isReservedName(name: string): boolean {
  return RESERVED.has(name);
}

/** The violation message for a reserved name. */
export function reservedNameMessage(name: string): string {
  return `"${name}" is a reserved name (a property of every JavaScript object); choose another name`;
}

/**
 * Every mapping key of the document that is a reserved name, with its path and the key's offset. No key of the
 * configuration's own vocabulary is one, so each is a name the operator chose.
 *
 * @param doc - the parsed YAML document, before it becomes data.
 */
export function reservedKeys(doc: Document): { path: ConfigPath; offset: number | undefined }[] {
  const found: { path: ConfigPath; offset: number | undefined }[] = [];
  const walk = (node: unknown, path: ConfigPath): void => {
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        if (!isScalar(pair.key)) continue;
        const key = String(pair.key.value);
        if (isReservedName(key)) found.push({ path: [...path, key], offset: pair.key.range?.[0] });
        walk(pair.value, [...path, key]);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => {
        walk(item, [...path, i]);
      });
    }
  };
  walk(doc.contents, []);
  return found;
}
