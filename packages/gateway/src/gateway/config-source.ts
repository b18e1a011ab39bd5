import { createHash } from 'node:crypto';

/**
 * A short fingerprint of a configuration text (the first 12 hex digits of its SHA-256), logged with each reload
 * so that operators and tests can see which version every thread runs.
 */
export function sourceVersion(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}
