import { describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../config/gateway-config.js';
import { loadConfigText } from '../config/load-config.js';
import { restartRequired } from './restart-settings.js';

const BASE = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
`;

function load(extra: string): GatewayConfig {
  const r = loadConfigText(BASE + extra, undefined, { env: {} });
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
}

describe('restartRequired', () => {
  it('reports nothing for the same settings, nor for settings a reload applies', () => {
    const a = load('upstream:\n  url: http://127.0.0.1:9\nheaders:\n  mode: both\n');
    expect(
      restartRequired(a, load('upstream:\n  url: http://127.0.0.1:9\nheaders:\n  mode: both\n')),
    ).toEqual([]);
    expect(
      restartRequired(a, load('upstream:\n  url: http://127.0.0.1:8\nheaders:\n  mode: legacy\n')),
    ).toEqual([]);
  });

  it('names each setting bound at start once, in table order', () => {
    const a = load('');
    const b = load(
      'server:\n  port: 1\n  host: 0.0.0.0\nlogging:\n  level: debug\nreload:\n  watch: false\nmetrics:\n  prefix: acme\n',
    );
    expect(restartRequired(a, b)).toEqual([
      'server.host/port',
      'metrics.prefix',
      'logging.level',
      'reload.watch',
    ]);
  });

  it('counts a section added or removed as a change of its listener address', () => {
    const a = load('');
    expect(restartRequired(a, load('decision:\n  port: 0\n'))).toEqual(['decision.host/port']);
    expect(restartRequired(load('decision:\n  port: 0\n'), a)).toEqual(['decision.host/port']);
    // Everything but the address follows reloads.
    expect(
      restartRequired(load('decision:\n  port: 0\n'), load('decision:\n  port: 0\n  path: /x\n')),
    ).toEqual([]);
  });

  it('groups the store section with the memory store sizing', () => {
    expect(restartRequired(load(''), load('store:\n  timeout: 2s\n'))).toEqual(['store']);
  });
});
