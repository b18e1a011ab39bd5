import { readFileSync } from 'node:fs';
import { dirname, resolve as resolvePath } from 'node:path';
import type { ErrorObject } from 'ajv';
import { ErrorCode, SluiceError } from 'sluice';
import { type Document, isMap, isPair, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import { type ConfigWarning, checkConfig, rememberWarnings } from './config-warnings.js';
import { substituteEnv } from './env-substitution.js';
import type { GatewayConfig } from './gateway-config.js';
import { rememberSource } from './loaded-source.js';
import { takeRateLimitBlock } from './rate-limit-block.js';
import { isSecretName, REDACTED, redactText, redactUrls, secretsIn } from './redact.js';
import { reservedKeys, reservedNameMessage } from './reserved-names.js';
import { resolveConfig } from './resolve-config.js';
import { schemaErrors } from './schema.js';
import { closestName } from './suggest.js';
import { type ConfigPath, formatPath, formatViolations, type Violation } from './violation.js';

/** Values given on the command line; each wins over the file, except `defaultHost`. */
export interface ConfigOverrides {
  readonly upstream?: string;
  readonly host?: string;
  readonly port?: number;
  /**
   * `server.host` when neither the file nor `host` names one (`SLUICE_DEFAULT_HOST`, which the container image
   * sets to `0.0.0.0`); the file wins over it.
   */
  readonly defaultHost?: string;
}

/** Options of {@link loadConfigText} and {@link loadConfigFile}. */
export interface LoadConfigOptions {
  /** Variables for `${NAME}` references; default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Command-line values that replace the file's. */
  readonly overrides?: ConfigOverrides;
}

/**
 * The outcome of loading: the configuration and its warnings, or every violation with its path and line.
 * Messages never show a secret: values of password, secret and token fields and URL passwords are redacted.
 */
export type LoadResult =
  | {
      readonly ok: true;
      readonly config: GatewayConfig;
      readonly violations: readonly [];
      /** Settings that are valid but risky or useless (see `checkConfig`), with their lines. */
      readonly warnings: readonly ConfigWarning[];
    }
  | {
      readonly ok: false;
      readonly config: undefined;
      readonly violations: readonly Violation[];
      readonly warnings: readonly [];
    };

/**
 * Parses, substitutes `${ENV}`, validates against the published schema and resolves a configuration text.
 * Nothing stops at the first problem: YAML syntax errors, missing variables, schema violations and the
 * cross-key checks are all reported, each with its path and line.
 *
 * @param text - the YAML text.
 * @param file - its file name, used for relative paths inside it and for `GatewayConfig.file`.
 * @param options - environment and command-line overrides.
 */
export function loadConfigText(
  text: string,
  file: string | undefined,
  options: LoadConfigOptions = {},
): LoadResult {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number | undefined) => {
    if (offset === undefined) return { line: 0, column: 0 };
    const p = lineCounter.linePos(offset);
    return { line: p.line, column: p.col };
  };
  const violations: Violation[] = [];
  for (const e of doc.errors) {
    const p = at(e.pos[0]);
    violations.push({ path: '', ...p, message: `YAML: ${e.message.split('\n')[0]}` });
  }
  if (violations.length > 0) return fail(violations, []);

  // Before substitution: the design document's block quotes variables that are never set.
  const block = takeRateLimitBlock(doc);
  if (block !== undefined)
    violations.push({ path: 'rate_limit', ...at(block.offset), message: block.message });
  for (const m of substituteEnv(doc, options.env ?? process.env)) {
    violations.push({
      path: formatPath(m.path),
      ...at(m.node.range?.[0]),
      message: `environment variable ${m.name} is not set (write \${${m.name}:-default} for a default)`,
    });
  }
  // Before the document becomes data, which drops a `__proto__` key and lets `constructor` read as defined.
  for (const r of reservedKeys(doc)) {
    const name = String(r.path[r.path.length - 1]);
    violations.push({ path: formatPath(r.path), ...at(r.offset), message: reservedNameMessage(name) });
  }
  const data = (doc.toJS() ?? {}) as Record<string, unknown>;
  applyOverrides(data, options.overrides);
  const secrets = secretsIn(data);

  const errors = typeof data === 'object' && !Array.isArray(data) ? schemaErrors(data) : [];
  if (typeof data !== 'object' || Array.isArray(data)) {
    violations.push({
      path: '',
      line: 1,
      column: 1,
      message: 'the file must be a mapping with a rateLimiting key',
    });
  }
  const missingPaths = new Set(violations.map((v) => v.path));
  for (const e of relevantErrors(errors)) {
    if (missingPaths.has(formatPath(pointerToPath(e.instancePath)))) continue;
    const path = pointerToPath(e.instancePath);
    const key = e.keyword === 'additionalProperties' ? String(e.params.additionalProperty) : undefined;
    const node = key === undefined ? nodeAt(doc, path) : keyNodeAt(doc, path, key);
    violations.push({
      path: formatPath(key === undefined ? path : [...path, key]),
      ...at(node?.range?.[0]),
      message: messageOf(e, isSecretName(path[path.length - 1] ?? '')),
    });
  }
  const schemaFailed = violations.length > 0;

  const baseDir = file === undefined ? process.cwd() : dirname(resolvePath(file));
  let resolved: ReturnType<typeof resolveConfig> = { config: undefined, issues: [] };
  try {
    resolved = resolveConfig(data, baseDir, file === undefined ? undefined : resolvePath(file));
  } catch {
    // Data that broke the schema may break the cross-key checks too; its schema violations already explain it.
  }
  const { config, issues } = resolved;
  const reported = new Set(violations.map((v) => v.path));
  for (const issue of issues) {
    if (schemaFailed && reported.has(formatPath(issue.path))) continue;
    const parent = issue.path.slice(0, -1);
    const last = issue.path[issue.path.length - 1];
    const node =
      issue.atKey && typeof last === 'string'
        ? keyNodeAt(doc, parent, last)
        : (nodeAt(doc, issue.path) ?? nodeAt(doc, parent));
    violations.push({ path: formatPath(issue.path), ...at(node?.range?.[0]), message: issue.message });
  }
  if (config === undefined || schemaFailed || violations.length > 0) return fail(violations, secrets);
  const warnings = checkConfig(config).map((w) => {
    const node = nodeAt(doc, w.path);
    return {
      ...w,
      path: formatPath(w.path),
      ...at(node?.range?.[0]),
      message: redactText(w.message, secrets),
    };
  });
  rememberWarnings(config, warnings);
  rememberSource(config, text);
  return { ok: true, config, violations: [], warnings };
}

/**
 * The text of a configuration file. `sluice serve --threads` reads it once, on the main thread, and hands the same
 * text to every thread, so that all of them run one version even when the file changes meanwhile.
 *
 * @param file - the configuration file.
 * @returns its text (UTF-8).
 * @throws SluiceError `ERR_INVALID_CONFIG` when the file cannot be read.
 */
export function readConfigSource(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (cause) {
    throw new SluiceError(
      ErrorCode.InvalidConfig,
      `cannot read configuration file ${file}: ${(cause as Error).message}`,
      { file },
      { cause },
    );
  }
}

/**
 * Reads and loads a configuration file; see {@link loadConfigText}.
 *
 * @throws SluiceError `ERR_INVALID_CONFIG` only when the file cannot be read; violations are returned.
 */
export function loadConfigFile(file: string, options: LoadConfigOptions = {}): LoadResult {
  return loadConfigText(readConfigSource(file), file, options);
}

/**
 * Loads a file or throws: the form used at start, where an invalid file must stop the process.
 *
 * @throws SluiceError `ERR_INVALID_CONFIG` whose message lists every violation as `file:line:column path: message`
 * and whose `details.violations` holds them.
 */
export function loadConfigOrThrow(file: string, options: LoadConfigOptions = {}): GatewayConfig {
  const result = loadConfigFile(file, options);
  if (result.ok) return result.config;
  throw new SluiceError(
    ErrorCode.InvalidConfig,
    `invalid configuration ${file} (${result.violations.length} violation${result.violations.length === 1 ? '' : 's'}):\n${formatViolations(file, result.violations)}`,
    { file, violations: result.violations },
  );
}

function fail(found: Violation[], secrets: readonly string[]): LoadResult {
  // A message may quote a given value: the file's secrets and URL passwords never leave the loader.
  const violations = found.map((v) => ({ ...v, message: redactText(v.message, secrets) }));
  violations.sort((a, b) => a.line - b.line || a.column - b.column);
  return { ok: false, config: undefined, violations, warnings: [] };
}

function applyOverrides(data: Record<string, unknown>, o: ConfigOverrides | undefined): void {
  if (o === undefined || typeof data !== 'object' || data === null) return;
  const section = (name: string) => {
    const s = data[name];
    if (typeof s === 'object' && s !== null && !Array.isArray(s)) return s as Record<string, unknown>;
    const fresh: Record<string, unknown> = {};
    data[name] = fresh;
    return fresh;
  };
  if (o.upstream !== undefined) section('upstream').url = o.upstream;
  if (o.host !== undefined) section('server').host = o.host;
  else if (o.defaultHost !== undefined) {
    // A default only: a file's own server.host (even an invalid one, for the schema to report) stays.
    const server = data.server;
    if (server === undefined) section('server').host = o.defaultHost;
    else if (typeof server === 'object' && server !== null && !Array.isArray(server) && !('host' in server)) {
      (server as Record<string, unknown>).host = o.defaultHost;
    }
  }
  if (o.port !== undefined) section('server').port = o.port;
}

/** Drops the errors that only restate another: ajv's union-type errors report `type` once per branch. */
function relevantErrors(errors: ErrorObject[]): ErrorObject[] {
  const seen = new Set<string>();
  const out: ErrorObject[] = [];
  for (const e of errors) {
    const id = `${e.instancePath}|${e.keyword}|${e.message}|${JSON.stringify(e.params)}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(e);
  }
  return out;
}

function messageOf(e: ErrorObject, secret: boolean): string {
  const describe = (v: unknown) => (secret ? REDACTED : redactUrls(describeValue(v)));
  const parent = (e.parentSchema ?? {}) as { description?: string; properties?: Record<string, unknown> };
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String(e.params.additionalProperty);
      const known = Object.keys(parent.properties ?? {});
      const s = closestName(key, known);
      return `unknown key "${key}"${s === undefined ? '' : ` (did you mean "${s}"?)`}; known keys: ${known.join(', ')}`;
    }
    case 'required':
      return `missing required key "${String(e.params.missingProperty)}"`;
    case 'type':
      return `must be ${[e.params.type].flat().join(' or ')}, got ${describe(e.data)}`;
    case 'enum':
      return `must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}, got ${describe(e.data)}`;
    case 'pattern':
      // A description ends as a sentence does; its full stop before "; got" read as stray punctuation.
      return `${parent.description?.replace(/\.$/, '') ?? `must match ${String(e.params.pattern)}`}; got ${describe(e.data)}`;
    case 'propertyNames':
      return `has an invalid name: ${e.message ?? ''}`;
    default:
      return `${e.message ?? 'is invalid'}, got ${describe(e.data)}`;
  }
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return JSON.stringify(v);
}

function pointerToPath(pointer: string): ConfigPath {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^[0-9]+$/.test(s) ? Number(s) : s));
}

type Positioned = { range?: [number, number, number] | null };

/** The node at a path, for its line; `undefined` when the path does not exist in the file (a missing key). */
function nodeAt(doc: Document, path: ConfigPath): Positioned | undefined {
  let node: unknown = doc.contents;
  for (const part of path) {
    if (isMap(node)) {
      const pair = node.items.find(
        (p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(part),
      );
      if (pair === undefined) return node as Positioned;
      node = pair.value ?? pair.key;
    } else if (isSeq(node) && typeof part === 'number') {
      node = node.items[part];
    } else {
      return node as Positioned;
    }
  }
  return (node ?? doc.contents) as Positioned;
}

function keyNodeAt(doc: Document, path: ConfigPath, key: string): Positioned | undefined {
  const parent = nodeAt(doc, path);
  if (isMap(parent)) {
    const pair = parent.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
    if (pair !== undefined) return pair.key as Positioned;
  }
  return parent;
}
