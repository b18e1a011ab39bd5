// Writes deploy/kubernetes/monitoring/prometheus-rule.yaml: the alert rules of deploy/prometheus/rules/
// rate-limiting.yaml (what `sluice rules` prints for the default prefix) as a Prometheus Operator PrometheusRule.
// test/deploy/kubernetes.test.ts fails while the two differ; run this after changing the rules.
//
//   node scripts/prometheus-rule.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

const root = new URL('..', import.meta.url);
const rules = parse(readFileSync(new URL('deploy/prometheus/rules/rate-limiting.yaml', root), 'utf8'));
const header = [
  '# The alert rules `sluice rules` prints (deploy/prometheus/rules/rate-limiting.yaml, default prefix `sluice`), as',
  '# a Prometheus Operator PrometheusRule, written by `node scripts/prometheus-rule.mjs`. For another',
  '# metrics.prefix, print the rules with `sluice rules --config rate-limits.yaml` and put its `groups` under `spec`.',
  '',
].join('\n');
const rule = {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PrometheusRule',
  metadata: { name: 'sluice', labels: { 'app.kubernetes.io/name': 'sluice' } },
  spec: { groups: rules.groups },
};
const file = fileURLToPath(new URL('deploy/kubernetes/monitoring/prometheus-rule.yaml', root));
writeFileSync(file, header + stringify(rule, { lineWidth: 0 }));
