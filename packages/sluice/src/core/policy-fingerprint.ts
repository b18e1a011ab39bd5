import type { Policy } from './policy.js';

/**
 * Everything that makes two policies decide differently (name, quota, window, burst, shadow, queue, stepped
 * refill), as one string: equal strings decide alike. An override policy is named by its `bucketName`, so that it
 * has buckets of its own even with the sizes of its base. Stores that outlive one set of `Policy` objects (Redis,
 * the shared thread table) file buckets by it, so that a policy whose limits change on reload starts full, as
 * the memory store's buckets (filed by policy object) do, while an unchanged one keeps its buckets.
 *
 * @param p - the policy.
 * @returns the fingerprint, fields separated by NUL.
 */
export function policyFingerprint(p: Policy): string {
  const q = p.queue;
  const base = `${p.bucketName ?? p.name}\u0000${p.quota}\u0000${p.window}\u0000${p.burst}\u0000${p.shadow}\u0000${q?.limit ?? 0}\u0000${q?.maxWaitMs ?? 0}\u0000${p.stepMs}`;
  // Only a concurrency policy adds a field, so the buckets of every rate policy keep their names across releases.
  return p.concurrent > 0 ? `${base}\u0000c${p.concurrent}` : base;
}

/**
 * A short, stable version of a policy's definition: 8 hex digits of the FNV-1a hash of {@link policyFingerprint}.
 * The same definition yields the same version in every process and release, so a fleet agrees on it.
 *
 * @param p - the policy.
 * @returns 8 lowercase hex digits.
 */
export function policyVersion(p: Policy): string {
  const s = policyFingerprint(p);
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}
