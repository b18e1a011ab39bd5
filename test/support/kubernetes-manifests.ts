/**
 * Renders and validates the Kubernetes manifests of deploy/kubernetes without a cluster or a kustomize binary (no
 * npm package ships kustomize). {@link renderKustomization} implements the part of kustomize those files use
 * (`resources` as files or folders, `namespace`, `configMapGenerator` from files without a name hash) and refuses
 * every other field by name, so a kustomization that needs more fails here instead of rendering differently from
 * `kubectl kustomize`. {@link validateManifest} checks an object against the OpenAPI schemas of the Kubernetes API
 * that the `kubernetes-models` package ships (its version is pinned in package.json), and, as the API server's
 * strict field validation does, refuses fields the schema does not know (the schemas alone allow them).
 *
 * @example
 * ```ts
 * const objects = renderKustomization('deploy/kubernetes');
 * for (const o of objects) expect(validateManifest(o)).toEqual([]);
 * ```
 */
import { readFileSync, statSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** One Kubernetes object as rendered: plain JSON data. */
export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
};

const KUSTOMIZATION_FIELDS = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'configMapGenerator']);
const GENERATOR_FIELDS = new Set(['name', 'files', 'options']);
/** Kinds without a namespace among those the manifests may use. */
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'PriorityClass']);

function refuse(file: string, what: string): never {
  throw new Error(
    `${file}: ${what}; the suite's renderer (test/support/kubernetes-manifests.ts) covers resources, namespace and configMapGenerator with files and disableNameSuffixHash`,
  );
}

/** A path inside `root` (kustomize's load restrictor: no file outside the kustomization's folder). */
function inside(root: string, path: string, file: string): string {
  const full = resolve(root, path);
  if (/^[a-z]+:\/\//i.test(path) || relative(root, full).startsWith('..')) {
    refuse(file, `${JSON.stringify(path)} is outside the kustomization's folder`);
  }
  return full;
}

/** The objects of a YAML file of one or more documents. */
function readObjects(file: string): Manifest[] {
  const out: Manifest[] = [];
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0].message}`);
    const value = doc.toJSON() as Manifest | null;
    if (value !== null) out.push(value);
  }
  return out;
}

/** Renders the kustomization in `dir` (a folder holding kustomization.yaml) as `kubectl kustomize` would. */
export function renderKustomization(dir: string): Manifest[] {
  const root = resolve(dir);
  const file = join(root, 'kustomization.yaml');
  const k = readObjects(file)[0] as unknown as Record<string, unknown>;
  for (const key of Object.keys(k))
    if (!KUSTOMIZATION_FIELDS.has(key)) refuse(file, `unsupported field ${key}`);
  const objects: Manifest[] = [];
  for (const entry of (k.resources as string[] | undefined) ?? []) {
    const path = inside(root, entry, file);
    if (statSync(path).isDirectory()) objects.push(...renderKustomization(path));
    else objects.push(...readObjects(path));
  }
  for (const g of (k.configMapGenerator as Record<string, unknown>[] | undefined) ?? []) {
    for (const key of Object.keys(g))
      if (!GENERATOR_FIELDS.has(key)) refuse(file, `unsupported generator field ${key}`);
    const options = (g.options ?? {}) as Record<string, unknown>;
    if (options.disableNameSuffixHash !== true || Object.keys(options).length !== 1) {
      refuse(file, 'a generator needs options.disableNameSuffixHash: true and nothing else');
    }
    const data: Record<string, string> = {};
    for (const spec of (g.files as string[] | undefined) ?? []) {
      const [key, path] = spec.includes('=') ? spec.split('=', 2) : [basename(spec), spec];
      data[key] = readFileSync(inside(root, path, file), 'utf8');
    }
    objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: g.name as string }, data });
  }
  const namespace = k.namespace as string | undefined;
  if (namespace !== undefined) {
    for (const o of objects) {
      if (!CLUSTER_SCOPED.has(o.kind)) o.metadata = { ...o.metadata, namespace };
    }
  }
  return objects;
}

/** The schema module of each kind the manifests use, in kubernetes-models/_schemas. */
const SCHEMAS: Readonly<Record<string, string>> = {
  'v1/Namespace': 'IoK8sApiCoreV1Namespace',
  'v1/ConfigMap': 'IoK8sApiCoreV1ConfigMap',
  'v1/Secret': 'IoK8sApiCoreV1Secret',
  'v1/Service': 'IoK8sApiCoreV1Service',
  'apps/v1/Deployment': 'IoK8sApiAppsV1Deployment',
  'policy/v1/PodDisruptionBudget': 'IoK8sApiPolicyV1PodDisruptionBudget',
  'autoscaling/v2/HorizontalPodAutoscaler': 'IoK8sApiAutoscalingV2HorizontalPodAutoscaler',
  'networking.k8s.io/v1/NetworkPolicy': 'IoK8sApiNetworkingV1NetworkPolicy',
};

type Validate = ((data: unknown) => boolean) & {
  errors?: { instancePath: string; message?: string; keyword: string; params: unknown }[] | null;
};

/**
 * Wraps `value` so that the names the validator looks up are recorded per object: a key the validator never asked
 * for is a field the schema does not have. An object the validator enumerates (a map such as labels) counts whole.
 */
function tracked(
  value: unknown,
  path: string,
  seen: Map<string, Set<string>>,
  all: Map<string, object>,
): unknown {
  if (value === null || typeof value !== 'object') return value;
  all.set(path, value);
  const asked = new Set<string>();
  seen.set(path, asked);
  const children = new Map<string, unknown>();
  return new Proxy(value, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver);
      if (typeof key !== 'string') return v;
      asked.add(key);
      if (!children.has(key)) children.set(key, tracked(v, `${path}/${key}`, seen, all));
      return children.get(key);
    },
    has(target, key) {
      if (typeof key === 'string') asked.add(key);
      return Reflect.has(target, key);
    },
    ownKeys(target) {
      for (const k of Reflect.ownKeys(target)) if (typeof k === 'string') asked.add(k);
      return Reflect.ownKeys(target);
    },
  });
}

/** A validation error in words (the precompiled validators carry no messages). */
function describe(e: { keyword: string; params: unknown }): string {
  const p = e.params as Record<string, unknown>;
  if (e.keyword === 'type') return `must be ${String(p.type)}`;
  if (e.keyword === 'required') return `must have required property ${String(p.missingProperty)}`;
  if (e.keyword === 'enum') return `must be one of ${JSON.stringify(p.allowedValues)}`;
  return `${e.keyword} ${JSON.stringify(p)}`;
}

/**
 * Checks one object against the schema of its kind; returns the problems (empty when valid), each as
 * `path: message`. An unknown kind is a problem too, so every rendered object is checked by some schema.
 */
export async function validateManifest(o: Manifest): Promise<string[]> {
  const schema = SCHEMAS[`${o.apiVersion}/${o.kind}`];
  if (schema === undefined) return [`${o.apiVersion} ${o.kind}: no schema in the suite's table`];
  const { validate } = (await import(`kubernetes-models/_schemas/${schema}`)) as { validate: Validate };
  const seen = new Map<string, Set<string>>();
  const all = new Map<string, object>();
  const ok = validate(tracked(o, '', seen, all));
  const problems = ok ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'}: ${describe(e)}`);
  for (const [path, object] of all) {
    if (Array.isArray(object)) continue;
    const asked = seen.get(path) ?? new Set();
    for (const key of Object.keys(object)) {
      if (!asked.has(key)) problems.push(`${path}/${key}: unknown field`);
    }
  }
  return problems;
}
