import type { SectionIssue } from './decision-config.js';
import type { EndpointRule } from './gateway-config.js';

/**
 * The shadow flags one policy cannot honour: rules naming one class share its policy, which is a shadow or not,
 * so they must agree; and the class failed credentials count against must keep denying.
 *
 * @param endpoints - the resolved endpoint rules.
 * @param publicAuthClass - the class failed credentials count against.
 * @returns one issue per offending rule, pointing at its `shadow` key.
 */
export function shadowIssues(endpoints: readonly EndpointRule[], publicAuthClass: string): SectionIssue[] {
  const issues: SectionIssue[] = [];
  const first = new Map<string, EndpointRule>();
  for (const rule of endpoints) {
    if (rule.className === undefined) continue;
    const path = ['rateLimiting', 'endpoints', rule.index, 'shadow'];
    const earlier = first.get(rule.className);
    if (earlier === undefined) first.set(rule.className, rule);
    else if (earlier.shadow !== rule.shadow)
      issues.push({
        path,
        message: `rules naming class "${rule.className}" share its bucket, so they must agree on "shadow"`,
      });
    if (rule.shadow && rule.className === publicAuthClass)
      issues.push({
        path,
        message: `class "${rule.className}" also limits failed credentials, which must keep denying: it cannot be a shadow`,
      });
  }
  return issues;
}
