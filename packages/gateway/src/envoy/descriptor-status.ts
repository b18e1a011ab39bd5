import type { PolicyOutcome } from 'sluice';
import type { EnvoyUnit } from '../config/envoy-config.js';
import type { CompiledNode } from './envoy-plan.js';
import type { DescriptorStatusMessage } from './rls-messages.js';

const UNIT_NAMES: Readonly<Record<EnvoyUnit, string>> = Object.freeze({
  second: 'SECOND',
  minute: 'MINUTE',
  hour: 'HOUR',
  day: 'DAY',
  month: 'MONTH',
  year: 'YEAR',
});
const WINDOW_UNITS: ReadonlyMap<number, string> = new Map([
  [1, 'SECOND'],
  [60, 'MINUTE'],
  [3600, 'HOUR'],
  [86_400, 'DAY'],
  [2_592_000, 'MONTH'],
  [31_536_000, 'YEAR'],
]);

/**
 * The status of one descriptor in Envoy's answer: `OVER_LIMIT` when its policy limited (a shadow policy never
 * does), the limit as Envoy names it (the configured unit, else the policy's window when it is one of Envoy's
 * units), `limit_remaining` and the seconds until the bucket is full.
 *
 * @param node - the configuration node the descriptor matched, if any.
 * @param outcome - the decision's outcome for the descriptor's policy.
 */
export function statusOf(node: CompiledNode | undefined, outcome: PolicyOutcome): DescriptorStatusMessage {
  const p = outcome.policy;
  const limit = node?.limit;
  const fromConfig = limit !== undefined && node?.policy === p;
  return {
    code: outcome.limited && !p.shadow ? 'OVER_LIMIT' : 'OK',
    current_limit: {
      name: p.name,
      requests_per_unit: p.quota,
      unit: fromConfig ? UNIT_NAMES[limit.unit] : (WINDOW_UNITS.get(p.window) ?? 'UNKNOWN'),
    },
    limit_remaining: outcome.remaining,
    duration_until_reset: { seconds: outcome.resetSeconds, nanos: 0 },
  };
}
