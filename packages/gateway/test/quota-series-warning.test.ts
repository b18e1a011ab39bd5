import { describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';

const BASE = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
quota:
  tracking: { storage: memory }
`;

function codes(yaml: string): string[] {
  const r = loadConfigText(yaml, undefined);
  expect(r.ok).toBe(true);
  return r.ok ? r.warnings.map((w) => w.code) : [];
}

describe('quota tracking without an admin listener', () => {
  it('warns that the per-tenant series are served nowhere', () => {
    const r = loadConfigText(BASE, undefined);
    const w = r.ok ? r.warnings.find((x) => x.code === 'W_QUOTA_SERIES_UNSERVED') : undefined;
    expect(w).toMatchObject({ path: 'quota' });
    expect(w?.line).toBeGreaterThan(0);
    expect(w?.message).toContain('sluice_quota_usage_ratio');
    expect(w?.suggestion).toContain('admin');
  });

  it('is quiet with an admin listener, or with metrics switched off', () => {
    expect(codes(`${BASE}admin: { token: admin-token-0123456789 }\n`)).toEqual([]);
    expect(codes(`${BASE}metrics: { enabled: false }\n`)).toEqual([]);
  });
});
