/**
 * deploy/kubernetes: rendered as `kubectl kustomize` would (test/support/kubernetes-manifests.ts), every object
 * validated against the Kubernetes API schemas of the pinned `kubernetes-models` package with unknown fields
 * refused, and the facts an operator relies on checked: the configuration in the ConfigMap is valid for the
 * gateway, probes, ports and timeouts agree with it, and the admin port stays out of the Service and inside the
 * cluster.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfigFile } from '../../packages/gateway/src/config/load-config.js';
import { type Manifest, renderKustomization, validateManifest } from '../support/kubernetes-manifests.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIR = join(ROOT, 'deploy/kubernetes');
const tmp = mkdtempSync(join(tmpdir(), 'sluice-k8s-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are untyped JSON, checked field by field below.
type Any = any;

const objects = renderKustomization(DIR);
const find = (kind: string, name: string): Any => {
  const o = objects.find((m) => m.kind === kind && m.metadata.name === name);
  if (o === undefined) throw new Error(`no ${kind} ${name} rendered`);
  return o;
};
const deployment = find('Deployment', 'sluice');
const pod = deployment.spec.template.spec;
const container = pod.containers.find((c: Any) => c.name === 'sluice');
const portOf = (name: string): number => container.ports.find((p: Any) => p.name === name).containerPort;

describe('deploy/kubernetes', () => {
  it('renders every object, all in the sluice namespace', () => {
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'ConfigMap/sluice-config',
      'Deployment/redis',
      'Deployment/sluice',
      'HorizontalPodAutoscaler/sluice',
      'Namespace/sluice',
      'NetworkPolicy/redis',
      'NetworkPolicy/sluice',
      'PodDisruptionBudget/sluice',
      'Service/redis',
      'Service/sluice',
    ]);
    for (const o of objects.filter((m) => m.kind !== 'Namespace'))
      expect(o.metadata.namespace).toBe('sluice');
  });

  it('validates against the Kubernetes API schemas, unknown fields refused', async () => {
    for (const o of objects) expect(await validateManifest(o), `${o.kind}/${o.metadata.name}`).toEqual([]);
    // The check has teeth: a misspelt field and a wrong type are both reported where they are.
    const broken: Any = structuredClone(deployment);
    broken.spec.replica = 2;
    broken.spec.template.spec.containers[0].readinessProbe.httpGet.prot = 8080;
    broken.spec.revisionHistoryLimit = 'five';
    const problems = await validateManifest(broken as Manifest);
    expect(problems).toContain('/spec/replica: unknown field');
    expect(problems).toContain('/spec/template/spec/containers/0/readinessProbe/httpGet/prot: unknown field');
    expect(problems).toContain('/spec/revisionHistoryLimit: must be integer');
  });

  it('refuses kustomization fields its renderer does not implement, rather than rendering them differently', () => {
    const dir = mkdtempSync(join(tmp, 'k-'));
    writeFileSync(join(dir, 'kustomization.yaml'), 'resources: []\ncommonLabels: { a: b }\n');
    expect(() => renderKustomization(dir)).toThrow(/unsupported field commonLabels/);
    writeFileSync(join(dir, 'kustomization.yaml'), 'resources: [../elsewhere.yaml]\n');
    expect(() => renderKustomization(dir)).toThrow(/outside the kustomization's folder/);
  });

  it('runs two replicas with probes, resources, a non-root read-only container and threads from the CPU limit', () => {
    expect(deployment.spec.replicas).toBe(2);
    expect(container.readinessProbe.httpGet).toEqual({ path: '/ready', port: 'http' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(container.resources.requests).toMatchObject({
      cpu: expect.any(String),
      memory: expect.any(String),
    });
    expect(container.resources.limits).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(container.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    expect(container.args).toEqual([
      'serve',
      '--config',
      '/etc/sluice/rate-limits.yaml',
      '--threads',
      '$(SLUICE_THREADS)',
    ]);
    const threads = container.env.find((e: Any) => e.name === 'SLUICE_THREADS');
    expect(threads.valueFrom.resourceFieldRef).toEqual({ resource: 'limits.cpu', divisor: '1' });
    expect(deployment.spec.strategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
  });

  it('mounts the ConfigMap as a folder (a subPath mount would never be updated, so never reloaded)', () => {
    const mount = container.volumeMounts.find((m: Any) => m.mountPath === '/etc/sluice');
    expect(mount.subPath).toBeUndefined();
    const volume = pod.volumes.find((v: Any) => v.name === mount.name);
    expect(volume.configMap.name).toBe('sluice-config');
    expect(Object.keys(find('ConfigMap', 'sluice-config').data)).toEqual(['rate-limits.yaml']);
    // /tmp is the one writable folder of the read-only root filesystem.
    expect(container.volumeMounts.some((m: Any) => m.mountPath === '/tmp')).toBe(true);
  });

  it('holds a configuration the gateway accepts, with the admin token from a Secret through environment substitution', () => {
    const text = find('ConfigMap', 'sluice-config').data['rate-limits.yaml'];
    const file = join(tmp, 'rate-limits.yaml');
    writeFileSync(file, text);
    const names = [...text.matchAll(/\$\{([A-Z_]+)\}/g)].map((m) => m[1]);
    expect(names).toEqual(['SLUICE_ADMIN_TOKEN']);
    const token = container.env.find((e: Any) => e.name === 'SLUICE_ADMIN_TOKEN');
    expect(token.valueFrom.secretKeyRef).toEqual({ name: 'sluice-admin', key: 'token' });

    const loaded = loadConfigFile(file, { env: { SLUICE_ADMIN_TOKEN: 'a-token-of-at-least-16-characters' } });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.violations));
    const c = loaded.config;
    // The one warning is expected: the admin listener on the pod's address, kept in the cluster by the NetworkPolicy.
    expect(loaded.warnings.map((w) => w.code)).toEqual(['W_ADMIN_PLAINTEXT_PUBLIC']);
    expect(c.server.host).toBe('0.0.0.0');
    expect(c.server.port).toBe(portOf('http'));
    expect(c.admin?.port).toBe(portOf('admin'));
    // Draining fits in the grace period, after the preStop pause.
    const grace = pod.terminationGracePeriodSeconds * 1000;
    expect(c.server.shutdownTimeoutMs + container.lifecycle.preStop.sleep.seconds * 1000).toBeLessThan(grace);
    // The store is the Redis Service of redis/, on its port.
    const redis = find('Service', 'redis');
    expect(text).toContain(`url: redis://${redis.metadata.name}:${redis.spec.ports[0].port}`);
  });

  it('keeps the admin port out of the Service and inside the cluster', () => {
    const service = find('Service', 'sluice');
    const admin = portOf('admin');
    for (const p of service.spec.ports) {
      expect([p.port, p.targetPort]).not.toContain(admin);
      expect(p.targetPort).not.toBe('admin');
    }
    expect(service.spec.ports.map((p: Any) => p.targetPort)).toEqual(['http']);
    expect(service.spec.type).toBe('ClusterIP');

    const policy = find('NetworkPolicy', 'sluice');
    expect(policy.spec.podSelector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    const adminRules = policy.spec.ingress.filter((r: Any) =>
      r.ports.some((p: Any) => p.port === 'admin' || p.port === admin),
    );
    expect(adminRules).toHaveLength(1);
    // Only pod and namespace selectors: no ipBlock, and no rule without `from` (which would admit everyone).
    expect(adminRules[0].from.length).toBeGreaterThan(0);
    for (const peer of adminRules[0].from) expect(peer.ipBlock).toBeUndefined();
  });

  it('guards disruptions and scales the Deployment', () => {
    const pdb = find('PodDisruptionBudget', 'sluice');
    expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    const hpa = find('HorizontalPodAutoscaler', 'sluice');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'sluice' });
    expect(hpa.spec.minReplicas).toBe(deployment.spec.replicas);
    // failureMode local: each gateway admits limit / nodeCount during a Redis outage, so nodeCount must be the
    // most gateways that run (the autoscaler's maximum) for the fleet to stay within every limit.
    const config = parse(find('ConfigMap', 'sluice-config').data['rate-limits.yaml']);
    expect(config.store.failureMode).toBe('local');
    expect(config.store.nodeCount).toBe(hpa.spec.maxReplicas);
  });

  it('ships the alert rules that sluice rules renders, and scrapes the proxy port', () => {
    const monitoring = renderKustomization(join(DIR, 'monitoring'));
    const rule: Any = monitoring.find((o) => o.kind === 'PrometheusRule');
    const rules = parse(readFileSync(join(ROOT, 'deploy/prometheus/rules/rate-limiting.yaml'), 'utf8'));
    expect(rule.spec.groups, 'run node scripts/prometheus-rule.mjs').toEqual(rules.groups);
    const monitor: Any = monitoring.find((o) => o.kind === 'PodMonitor');
    expect(monitor.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    expect(monitor.spec.podMetricsEndpoints).toEqual([
      expect.objectContaining({ port: 'http', path: '/metrics' }),
    ]);
    expect(deployment.spec.template.metadata.annotations).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(portOf('http')),
    });
  });
});
