/**
 * The configuration reference page, generated from the gateway's JSON Schema
 * (packages/gateway/schema/rate-limits.schema.json), the one source `sluice validate` checks files against: every
 * key with its type, default, range and description, then the example file. A key added to the schema appears at
 * the next build without an edit here.
 */

/** A JSON Schema node, as far as the reference reads it. */
type Node = Record<string, unknown>;

/** One key of the configuration file. */
export interface ConfigEntry {
  /** Dotted path; `<name>` stands for a key the user chooses, `[]` for an item of a list. */
  readonly path: string;
  /** The JSON types, an enumeration, or the definition it refers to. */
  readonly type: string;
  /** The default, from the schema's `default` or the `(default ...)` its description states; empty when none. */
  readonly default: string;
  /** Bounds, lengths, patterns and counts; empty when none. */
  readonly range: string;
  readonly required: boolean;
  readonly description: string;
}

/** The anchor of an entry on the page: lower case, runs of other characters as one dash. */
export function entryAnchor(path: string): string {
  return path
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

function resolve(node: Node, root: Node): { node: Node; ref?: string } {
  const ref = node.$ref;
  if (typeof ref !== 'string') return { node };
  // A JSON pointer into this schema (`#/definitions/tier`, `#/properties/envoy/definitions/descriptor`).
  const steps = ref.replace(/^#\//, '').split('/');
  let target: unknown = root;
  for (const step of steps) target = (target as Record<string, unknown> | undefined)?.[step];
  if (typeof target !== 'object' || target === null) throw new Error(`schema: ${ref} names nothing`);
  const name = steps[steps.length - 1];
  // The key's own words win over the definition's (the key says what the duration is for).
  const merged: Node = { ...resolve(target as Node, root).node, ...node };
  delete merged.$ref;
  return { node: merged, ref: name };
}

/** The alternatives of an `anyOf` or `oneOf`, each resolved. */
function alternatives(node: Node, root: Node): { node: Node; ref?: string }[] {
  const list = (node.anyOf ?? node.oneOf) as Node[] | undefined;
  return Array.isArray(list) ? list.map((n) => resolve(n, root)) : [];
}

function typeOf(node: Node, ref: string | undefined, root?: Node): string {
  const alts = root === undefined ? [] : alternatives(node, root);
  if (alts.length > 0)
    return alts
      .map((a) => (a.node.properties === undefined ? typeOf(a.node, a.ref, root) : 'object'))
      .join(', or ');
  if (Array.isArray(node.enum)) return `one of ${node.enum.map((v) => code(String(v))).join(', ')}`;
  if (node.const !== undefined) return code(String(node.const));
  const types = Array.isArray(node.type) ? node.type : node.type === undefined ? [] : [node.type];
  const items = node.items as Node | undefined;
  let shown = types.join(' or ');
  if (types.includes('array') && items !== undefined) {
    const item =
      items.$ref === undefined ? typeOf(items, undefined) : String(items.$ref).replace(/^.*\//, '');
    shown = `array of ${item}`;
  }
  if (ref === 'duration') return 'duration (seconds, or a string such as `500ms`, `60s`, `5m`)';
  if (ref === 'size') return 'size (bytes, or a string such as `512kb`, `10mb`)';
  if (ref === 'httpUrl') return 'http(s) URL';
  if (ref === 'headerName') return 'header name';
  return shown === '' ? 'any' : shown;
}

function defaultOf(node: Node): string {
  if (node.default !== undefined && typeof node.default !== 'object') return code(String(node.default));
  const description = typeof node.description === 'string' ? node.description : '';
  const stated = /\b(?:by )?default(?:s to|:)? ([^;,)]+)/i.exec(description);
  return stated === null ? '' : stated[1].trim().replace(/\.$/, '');
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

function rangeOf(node: Node): string {
  const parts: string[] = [];
  const n = (k: string) => (typeof node[k] === 'number' ? (node[k] as number) : undefined);
  const min = n('minimum');
  const max = n('maximum');
  if (min !== undefined && max !== undefined) parts.push(`${min} to ${max}`);
  else if (min !== undefined) parts.push(`at least ${min}`);
  else if (max !== undefined) parts.push(`at most ${max}`);
  if (n('exclusiveMinimum') !== undefined) parts.push(`above ${n('exclusiveMinimum')}`);
  if (n('minLength') !== undefined && n('minLength') !== 0)
    parts.push(`at least ${plural(n('minLength') as number, 'character')}`);
  if (n('maxLength') !== undefined) parts.push(`at most ${plural(n('maxLength') as number, 'character')}`);
  if (n('minItems') !== undefined) parts.push(`at least ${plural(n('minItems') as number, 'item')}`);
  if (n('maxItems') !== undefined) parts.push(`at most ${plural(n('maxItems') as number, 'item')}`);
  if (n('minProperties') !== undefined) parts.push(`at least ${plural(n('minProperties') as number, 'key')}`);
  if (n('maxProperties') !== undefined) parts.push(`at most ${plural(n('maxProperties') as number, 'key')}`);
  if (node.uniqueItems === true) parts.push('no repeated items');
  if (typeof node.pattern === 'string' && !Array.isArray(node.enum))
    parts.push(`matches ${code(node.pattern)}`);
  return parts.join('; ');
}

/**
 * Every key of the schema, depth first in the schema's order: objects, their properties, the keys of maps
 * (`<name>`) and the members of list items (`[]`).
 */
export function configEntries(schema: Node): ConfigEntry[] {
  const entries: ConfigEntry[] = [];
  const visit = (raw: Node, path: string, required: boolean, seen: readonly string[]) => {
    const { node, ref } = resolve(raw, schema);
    // A definition met again below itself would recurse for ever; none does today, the guard keeps it so.
    if (ref !== undefined && seen.includes(ref)) return;
    const below = ref === undefined ? seen : [...seen, ref];
    if (path !== '') {
      entries.push({
        path,
        type: typeOf(node, ref, schema),
        default: defaultOf(node),
        range: rangeOf(node),
        required,
        description: typeof node.description === 'string' ? node.description : '',
      });
    }
    children(node, path, below);
  };
  const children = (node: Node, path: string, seen: readonly string[]) => {
    // An `anyOf` (a number or an object, say): the keys of each object it allows.
    for (const alt of alternatives(node, schema)) {
      if (alt.ref === undefined || !seen.includes(alt.ref))
        children(alt.node, path, alt.ref === undefined ? seen : [...seen, alt.ref]);
    }
    const req = Array.isArray(node.required) ? (node.required as string[]) : [];
    const prefix = path === '' ? '' : `${path}.`;
    for (const [key, child] of Object.entries((node.properties as Record<string, Node>) ?? {})) {
      visit(child, `${prefix}${key}`, req.includes(key), seen);
    }
    if (typeof node.additionalProperties === 'object' && node.additionalProperties !== null) {
      visit(node.additionalProperties as Node, `${prefix}<name>`, false, seen);
    }
    const items = node.items as Node | undefined;
    if (items !== undefined && typeof items === 'object') {
      const { node: item, ref } = resolve(items, schema);
      // A list of the definition it is part of (nested Envoy descriptors) has the keys listed above it.
      if (ref !== undefined && seen.includes(ref)) return;
      if (item.properties !== undefined || typeof item.additionalProperties === 'object') {
        children(item, `${path}[]`, ref === undefined ? seen : [...seen, ref]);
      }
    }
  };
  visit(schema, '', true, []);
  return entries;
}

function cell(text: string): string {
  return text === '' ? ' ' : text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** A code span of any text: one holding a backtick (a header name's pattern) is fenced with two. */
function code(text: string): string {
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``;
}

/** Escapes what Markdown or the site's templates would read as markup in plain prose, code spans left as written. */
function prose(text: string): string {
  return text
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/</g, '&lt;').replace(/\{\{/g, '&#123;&#123;')))
    .join('');
}

/**
 * The page: an index of the sections, one entry per key (a heading the search finds, its facts, its description)
 * and the example file.
 *
 * @param schema - the parsed schema.
 * @param exampleYaml - the text of packages/gateway/examples/rate-limits.yaml.
 */
export function configReferencePage(schema: Node, exampleYaml: string): string {
  const entries = configEntries(schema);
  const tops = entries.filter((e) => !e.path.includes('.') && !e.path.includes('['));
  const out: string[] = [
    '---',
    'outline: 2',
    '---',
    '',
    '# Configuration file reference',
    '',
    prose(String(schema.description ?? '')),
    '',
    'This page is generated from the JSON Schema the gateway validates every file against',
    '(`packages/gateway/schema/rate-limits.schema.json`, shipped in the package as',
    '`@sluice/gateway/schema/rate-limits.schema.json`). `sluice validate FILE` checks a file against the same',
    'schema and the start checks, and prints every violation as `FILE:LINE:COLUMN PATH: MESSAGE`. A key',
    'written `<name>` is one the file chooses (a tier name, a class name); `[]` is an item of a list.',
    'Durations are seconds or strings such as `500ms`, `60s`, `5m`, `1h`, `7d`; sizes are bytes or strings',
    'such as `512kb`, `10mb`, `1gb`.',
    '',
    '| section | required | what it holds |',
    '| --- | --- | --- |',
    ...tops.map(
      (e) =>
        `| [\`${e.path}\`](#${entryAnchor(e.path)}) | ${e.required ? 'yes' : 'no'} | ${cell(prose(e.description))} |`,
    ),
    '',
    'Start from [the example file](#the-example-file) below.',
    '',
  ];
  for (const e of entries) {
    const top = !e.path.includes('.') && !e.path.includes('[');
    out.push(`${top ? '##' : '###'} \`${e.path}\` {#${entryAnchor(e.path)}}`, '');
    out.push('| type | default | range | required |', '| --- | --- | --- | --- |');
    out.push(
      `| ${cell(e.type)} | ${cell(prose(e.default))} | ${cell(prose(e.range))} | ${e.required ? 'yes' : 'no'} |`,
    );
    out.push('');
    if (e.description !== '') out.push(prose(e.description), '');
  }
  out.push(
    '## The example file',
    '',
    'The example configuration shipped with the gateway (`packages/gateway/examples/rate-limits.yaml`):',
    '',
  );
  out.push('```yaml', exampleYaml.trimEnd(), '```', '');
  return out.join('\n');
}
