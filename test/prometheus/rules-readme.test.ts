import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

interface Rule {
  readonly alert: string;
  readonly expr: string;
  readonly for: string;
  readonly labels: { readonly severity: string };
}

const rules = (
  parse(readFileSync(resolve('deploy/prometheus/rules/rate-limiting.yaml'), 'utf8')) as {
    groups: { rules: Rule[] }[];
  }
).groups.flatMap((g) => g.rules);
const readme = readFileSync(resolve('deploy/prometheus/README.md'), 'utf8');

/** The README's table rows: alert, expression, for, severity (a remark after the expression is kept). */
const rows = [...readme.matchAll(/^\| `(\w+)` +\| `(.+?)`(.*?) *\| (\S+) +\| (\S+) +\|$/gm)].map((m) => ({
  alert: m[1],
  expr: m[2],
  remark: (m[3] ?? '').trim(),
  for: m[4],
  severity: m[5],
}));

describe('deploy/prometheus/README.md', () => {
  it('lists every alert of the rules file, in its order, with its expression, duration and severity', () => {
    expect(rules.length).toBeGreaterThan(0);
    expect(rows.map((r) => r.alert)).toEqual(rules.map((r) => r.alert));
    for (const [i, rule] of rules.entries()) {
      expect(rows[i], rule.alert).toMatchObject({
        expr: rule.expr.trim(),
        for: rule.for,
        severity: rule.labels.severity,
      });
    }
  });

  it('adds no remark after an expression', () => {
    expect(rows.filter((r) => r.remark !== '')).toEqual([]);
  });
});
