import type { Decision } from 'sluice';
import type { AdmissionHost } from '../src/admission/admit-request.js';
import type { Gateway } from '../src/gateway/gateway.js';

/** Reads a property of the real object, methods bound to it, so a stand-in changes only what it names. */
function passThrough<T extends object>(target: T, p: string | symbol): unknown {
  const v = Reflect.get(target, p, target);
  return typeof v === 'function' ? v.bind(target) : v;
}

/**
 * A running gateway as the Envoy service sees it, with its store replaced and the decisions its metrics would
 * record kept in a list instead: the tests of the service watch the store calls and what was counted.
 *
 * @param gateway - the started gateway.
 * @param store - the store the service uses instead of the gateway's.
 * @returns the host to build a `RateLimitService` with, and the decisions recorded through it.
 */
export function serviceHostOf(
  gateway: Gateway,
  store: unknown,
): { host: AdmissionHost; decisions: Decision[] } {
  const decisions: Decision[] = [];
  const metrics = new Proxy(gateway.metrics, {
    get: (target, p) =>
      p === 'recordDecision' ? (d: Decision) => decisions.push(d) : passThrough(target, p),
  });
  const host = new Proxy(gateway, {
    get: (target, p) => (p === 'store' ? store : p === 'metrics' ? metrics : passThrough(target, p)),
  }) as unknown as AdmissionHost;
  return { host, decisions };
}
