import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Limiter } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { compileEndpoint } from './path-pattern.js';
import { RulePlans } from './rule-plans.js';
import { compileRule, type RuleOptions } from './rules.js';
import type { HttpRequestInfo } from './types.js';

const limiter = new Limiter({
  policies: [
    { name: 'p0', quota: 10, window: 60 },
    { name: 'p1', quota: 10, window: 60 },
    { name: 'p2', quota: 10, window: 60 },
  ],
  store: new MemoryStore({ sweepIntervalMs: 0 }),
});

// Rules of every shape the plans tell apart: without conditions, tiers only, an endpoint only, and mixed ones
// (tier and path, methods without a path, operations), so that every way of building the mask is exercised.
const policiesOf = fc.subarray(['p0', 'p1', 'p2'], { minLength: 1 });
const tierOf = fc.constantFrom<string | string[]>('free', ['free', 'pro'], 'pro');
const pathOf = fc.constantFrom('/api/*', '/api/items/:id', '/a/*/c', '/', '/system/seal', '/*');
const ruleOf = fc.oneof(
  fc.record({ policies: policiesOf }),
  fc.record({ tier: tierOf, policies: policiesOf }),
  fc.record({ path: pathOf, policies: policiesOf }),
  fc.record(
    {
      path: pathOf,
      methods: fc.constantFrom(['GET'], ['POST', 'PUT'], ['DELETE']),
      tier: tierOf,
      operation: fc.constantFrom<string | string[]>('rl.read', ['rl.read', 'rl.write']),
      policies: policiesOf,
    },
    { requiredKeys: ['policies'] },
  ),
);

const requestOf = fc.record({
  method: fc.constantFrom('GET', 'HEAD', 'POST', 'put', 'DELETE'),
  path: fc.constantFrom(
    '/',
    '/api',
    '/api/',
    '/API/items/7',
    '/api/items/7/',
    '/api/items//',
    '/a/b/c?x=1',
    '/a//c',
    '/system/seal',
    '/system/seal/x',
    'no-slash',
  ),
  tier: fc.constantFrom(undefined, 'free', 'pro', 'gold'),
  operation: fc.constantFrom(undefined, 'rl.read', 'rl.write'),
  onlyOps: fc.boolean(),
});

describe('rule plans', () => {
  it('match the rules that match one by one, whatever the rules and the request', () => {
    fc.assert(
      fc.property(
        fc.array(ruleOf, { minLength: 1, maxLength: 8 }),
        fc.array(requestOf, { minLength: 1 }),
        (options, requests) => {
          const rules = options.map((o, i) => compileRule(o as RuleOptions, limiter, `rules[${i}]`));
          const plans = new RulePlans(rules, '', 256);
          // Several requests through one set of plans: the cut path and the last plan are reused between them.
          for (const r of requests) {
            const req: HttpRequestInfo = {
              method: r.method,
              path: r.path,
              headers: {},
              remoteAddress: '192.0.2.1',
              ...(r.operation === undefined ? {} : { operation: r.operation }),
              ...(r.onlyOps ? { operationRulesOnly: true } : {}),
              ...(r.tier === undefined ? {} : { identity: { tier: r.tier } }),
            };
            const want = rules
              .filter((rule) => !(r.onlyOps && rule.operations === undefined) && rule.match(req))
              .map((rule) => rule.name);
            expect(plans.match(req)?.names ?? [], JSON.stringify({ options, r })).toEqual(want);
          }
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('give one plan object per set of matching rules', () => {
    const rules = [
      compileRule({ tier: 'free', policies: ['p0'] }, limiter, 'rules[0]'),
      compileRule({ path: '/api/*', policies: ['p1'] }, limiter, 'rules[1]'),
    ];
    const plans = new RulePlans(rules, '', 256);
    const req = (path: string, tier?: string): HttpRequestInfo => ({
      method: 'GET',
      path,
      headers: {},
      remoteAddress: undefined,
      ...(tier === undefined ? {} : { identity: { tier } }),
    });
    const both = plans.match(req('/api/x', 'free'));
    expect(both?.names).toEqual(['rules[0]', 'rules[1]']);
    expect(plans.match(req('/api/y', 'free'))).toBe(both);
    expect(plans.match(req('/other', 'free'))?.names).toEqual(['rules[0]']);
    expect(plans.match(req('/api/z', 'free'))).toBe(both);
    expect(plans.match(req('/other'))).toBeUndefined();
  });

  it('rewrite a checks list given back, equal to one built afresh, and never one still held (property)', () => {
    const rules = [
      compileRule({ tier: 'free', policies: ['p0', 'p1'] }, limiter, 'rules[0]'),
      compileRule({ path: '/api/*', policies: ['p2'], key: 'ip' }, limiter, 'rules[1]'),
      compileRule({ policies: ['p1'], key: 'principal' }, limiter, 'rules[2]'),
    ];
    const requests = fc.array(
      fc.record({
        ip: fc.constantFrom('192.0.2.1', '192.0.2.2', '2001:db8::1'),
        tier: fc.constantFrom(undefined, 'free'),
        client: fc.constantFrom(undefined, 'alice', 'b'.repeat(40)),
        path: fc.constantFrom('/api/x', '/other'),
        recycle: fc.boolean(),
      }),
      { minLength: 1, maxLength: 30 },
    );
    fc.assert(
      fc.property(requests, fc.constantFrom('', 'rl:'), (list, prefix) => {
        const plans = new RulePlans(rules, prefix, 32);
        const held: { list: readonly unknown[]; copy: unknown[] }[] = [];
        let given: readonly unknown[] | undefined;
        for (const r of list) {
          const req: HttpRequestInfo = {
            method: 'GET',
            path: r.path,
            headers: {},
            remoteAddress: r.ip,
            identity: { tier: r.tier, client: r.client },
          };
          const fresh = new RulePlans(rules, prefix, 32);
          const plan = plans.match(req);
          const freshPlan = fresh.match(req);
          if (plan === undefined || freshPlan === undefined) throw new Error('a rule always matches');
          const checks = plans.checks(req, plan, r.ip);
          if (given !== undefined && given.length === checks.length) expect(checks).toBe(given);
          expect(checks).toEqual(fresh.checks(req, freshPlan, r.ip));
          expect(plans.unhashedKeys()).toEqual(fresh.unhashedKeys());
          given = undefined;
          if (r.recycle) {
            plans.recycle(checks);
            given = checks;
          } else held.push({ list: checks, copy: checks.map((c) => ({ ...c })) });
        }
        for (const h of held) expect(h.list).toEqual(h.copy);
      }),
      { numRuns: 300 },
    );
  });

  it('pass over an exempt endpoint only when it cannot match, whatever the endpoints and the path (property)', () => {
    const endpointOf = fc.constantFrom(
      'GET /health',
      '/Health',
      'GET /.well-known/*',
      '/api/*',
      '/API/items/:id',
      '/*',
      '/',
      '/:id/x',
      'POST /system/seal',
    );
    const pathOf = fc.constantFrom(
      '/',
      '/?q',
      '/health',
      '/Health/',
      '/HEALTH',
      '/.well-known/a',
      '/.well-known',
      '/api',
      '/api/items/1',
      '/API/items/1?x',
      '/apis/x',
      '//health',
      '/system/seal',
      'health',
      '',
    );
    fc.assert(
      fc.property(fc.array(endpointOf, { minLength: 1, maxLength: 6 }), fc.array(pathOf), (texts, paths) => {
        const endpoints = texts.map((t) => compileEndpoint(t));
        const rules = [compileRule({ path: '/api/items/*', policies: ['p0'] }, limiter, 'rules[0]')];
        const plans = new RulePlans(rules, '', 256, endpoints);
        for (const path of paths) {
          const cut = plans.cut(path);
          endpoints.forEach((e, i) => {
            for (const method of ['GET', 'POST']) {
              const matches = e.matchSegments(method, cut);
              expect(matches && !plans.mayMatchAlso(i, cut), `${texts[i]} ${path}`).toBe(false);
              expect(matches).toBe(e.match(method, path));
            }
          });
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('compare a path with the default exempt endpoints by its first segment alone when it is none of theirs', () => {
    const endpoints = ['GET /health', 'GET /ready', 'GET /metrics', 'GET /.well-known/*'].map((t) =>
      compileEndpoint(t),
    );
    const plans = new RulePlans([], '', 256, endpoints);
    const cut = plans.cut('/api/items/1');
    expect(endpoints.map((_, i) => plans.mayMatchAlso(i, cut))).toEqual([false, false, false, false]);
    const health = plans.cut('/health?x');
    expect(endpoints.map((_, i) => plans.mayMatchAlso(i, health))).toEqual([true, false, false, false]);
  });
});
