import {
  checkOverrideReason,
  describeOverride,
  keepsOverride,
  liveOverrides,
  type OverrideChange,
  type OverrideRule,
  type OverrideStore,
  overrideId,
  parseOverride,
  SluiceError,
} from 'sluice';
import { canonicalOverridePattern, deriveKey, KEY_PATTERN_KINDS } from 'sluice/http';
import { closestName } from '../config/suggest.js';
import type { Logger } from '../log/create-logger.js';
import type { Runtime } from './runtime.js';

/** Bad input for an override, naming the field: the admin API answers it as a 400 problem. */
export class OverrideInputError extends Error {
  /**
   * @param field - the request field at fault (`pattern`, `policy`, `quota`, `expiresAt`, ...).
   * @param message - what was expected and what was given.
   */
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'OverrideInputError';
  }
}

/** The pattern prefix that names an API key of the key file instead of a bucket key. */
const API_KEY_NAME = 'apikey-name:';

/** A rule as the admin API lists it: with the seconds left until it ends. */
export type ListedOverride = OverrideRule & { readonly expiresInSeconds?: number };

/**
 * The operator's side of run-time overrides and blocks: validates a change against the configuration in force
 * (known policies and tiers), writes it to the store with its history entry, and logs it as one JSON line
 * (`audit: "override"`, who, what, when, why).
 */
export class OverrideControl {
  readonly #store: OverrideStore;
  readonly #runtime: () => Runtime;
  readonly #logger: Logger;
  readonly #now: () => number;

  /**
   * @param store - where the rules live.
   * @param runtime - the configuration in force (read at each change, so a reload's policies count).
   * @param logger - where audit lines go.
   * @param now - epoch milliseconds.
   */
  constructor(store: OverrideStore, runtime: () => Runtime, logger: Logger, now: () => number) {
    this.#store = store;
    this.#runtime = runtime;
    this.#logger = logger;
    this.#now = now;
  }

  /** The store's kind (`memory`, `shared`, `redis`). */
  get kind(): string {
    return this.#store.kind;
  }

  /**
   * Sets (adds or replaces) a rule.
   *
   * @param body - the request body (see `parseOverride` in `sluice`).
   * @param who - the admin token's name, or `penalty`.
   * @returns the rule as stored.
   * @throws OverrideInputError for bad input; SluiceError `ERR_STORE_UNAVAILABLE`, `ERR_OVERRIDES_FULL` from the
   * store.
   */
  async set(body: unknown, who: string): Promise<OverrideRule> {
    const now = this.#now();
    const rule = this.#validated(body, now, who);
    const change: OverrideChange = { action: 'set', id: rule.id, rule, who, at: now, reason: rule.reason };
    await this.#store.set(rule, change);
    this.#audit(change, `override set: ${describeOverride(rule)}`);
    return rule;
  }

  /**
   * Sets a rule no operator asked for (a penalty block): it never replaces an operator's rule in force with the
   * same id (a block stays as long and as strict as the operator set it, a `limit` stays in force), and its
   * change goes to the automatic history, so that a flood of them never pushes an operator's change out.
   *
   * @returns the rule as stored, or `undefined` when an operator's rule holds that id.
   * @throws as {@link OverrideControl.set}.
   */
  async setAutomatic(body: unknown, who: string): Promise<OverrideRule | undefined> {
    const now = this.#now();
    const rule = this.#validated(body, now, who);
    if (keepsOverride(this.#known(rule.id), rule, now)) return undefined;
    const change: OverrideChange = { action: 'set', id: rule.id, rule, who, at: now, reason: rule.reason };
    if ((await this.#store.set(rule, change, { automatic: true })) === false) return undefined;
    this.#audit(change, `override set: ${describeOverride(rule)}`);
    return rule;
  }

  /**
   * True once the rules in the store are known: false on a gateway whose Redis has not answered since it
   * started, whose listings would otherwise show no rule where rules may exist.
   */
  get loaded(): boolean {
    return this.#store.loaded !== false;
  }

  /**
   * True when a rule in force with this id was set by someone other than `who`: an automatic rule of `who` would
   * leave it in place, so there is no point in asking the store.
   */
  heldByOther(id: string, who: string): boolean {
    const known = this.#known(id);
    return known !== undefined && known.author !== who && (known.expiresAt ?? Infinity) > this.#now();
  }

  /** The rule with this id among the rules known here, if any (expired or not). */
  #known(id: string): OverrideRule | undefined {
    // By id where the store keeps them so: a penalty block on a store of 100,000 rules reads one, not all.
    const s = this.#store.snapshot();
    return s.ruleOf !== undefined ? s.ruleOf(id) : s.rules.find((r) => r.id === id);
  }

  /**
   * Removes a rule.
   *
   * @returns the removed rule, or `undefined` when none had the id.
   * @throws OverrideInputError for a reason that is empty, too long or holds control characters.
   */
  async remove(id: string, who: string, given: string): Promise<OverrideRule | undefined> {
    // An operator may name the rule by the pattern as typed (`ip:::ffff:1.2.3.4`), which was stored as the key
    // it names: that id is tried when the given one names no rule.
    const at = this.#now();
    // The removal's reason is printed and logged like a rule's: refused on the same terms.
    let reason: string;
    try {
      reason = checkOverrideReason(given);
    } catch (e) {
      if (e instanceof SluiceError) throw new OverrideInputError('reason', e.message);
      throw e;
    }
    for (const candidate of [id, canonicalId(id)]) {
      if (candidate === undefined) continue;
      const change: OverrideChange = { action: 'remove', id: candidate, who, at, reason };
      const gone = await this.#store.remove(candidate, change);
      if (gone !== undefined) {
        this.#audit({ ...change, rule: gone }, `override removed: ${candidate}`);
        return gone;
      }
    }
    return undefined;
  }

  /** The rules in force, with the seconds left on each that ends. */
  list(): ListedOverride[] {
    const now = this.#now();
    return liveOverrides(this.#store.snapshot().rules, now).map((r) =>
      r.expiresAt === undefined ? r : { ...r, expiresInSeconds: Math.ceil((r.expiresAt - now) / 1000) },
    );
  }

  /**
   * One page of the rules in force, in the store's order, with the seconds left on each that ends: only the page
   * is copied, so the dashboard reads 100,000 rules a page at a time.
   *
   * @param offset - rules skipped.
   * @param limit - rules at most.
   * @returns the page and the number of rules in force.
   */
  page(offset: number, limit: number): { rules: ListedOverride[]; total: number } {
    const now = this.#now();
    const live = liveOverrides(this.#store.snapshot().rules, now);
    const rules = live
      .slice(offset, offset + limit)
      .map((r) =>
        r.expiresAt === undefined ? r : { ...r, expiresInSeconds: Math.ceil((r.expiresAt - now) / 1000) },
      );
    return { rules, total: live.length };
  }

  /** The last changes, oldest first. */
  history(): Promise<readonly OverrideChange[]> {
    return this.#store.history();
  }

  /** Reads the store again now (Redis), so a listing right after a change elsewhere is current. */
  async refresh(): Promise<void> {
    await this.#store.refresh();
  }

  #validated(body: unknown, now: number, who: string): OverrideRule {
    let rule: OverrideRule;
    try {
      rule = parseOverride(body, now, who);
      checkGatewayKind(rule.pattern);
      if (rule.pattern.startsWith(API_KEY_NAME)) rule = this.#byKeyName(rule);
      rule = canonical(rule);
    } catch (e) {
      if (e instanceof SluiceError) {
        throw new OverrideInputError(String(e.details.option ?? 'body').replace(/^body\./, ''), e.message);
      }
      throw e;
    }
    if (rule.policy === undefined && rule.tier === undefined) return rule;
    const plan = this.#runtime().plan;
    if (rule.policy !== undefined && !plan.limiter.has(rule.policy)) {
      const known = plan.limiter.policies.map((p) => p.name).join(', ');
      throw new OverrideInputError(
        'policy',
        `policy must be a configured policy (${known}), got "${rule.policy}"`,
      );
    }
    // A limit has rate sizes; a concurrency policy counts requests in flight and keeps its slots under one.
    const scoped = plan.limiter.policies.find((p) => p.name === rule.policy);
    if (rule.effect === 'limit' && scoped !== undefined && scoped.concurrent > 0) {
      throw new OverrideInputError(
        'policy',
        `policy must be a rate policy for a limit (quota and window): "${rule.policy}" counts requests in flight (concurrent: ${scoped.concurrent}); use unlimited or a block to change it`,
      );
    }
    if (rule.tier !== undefined && plan.tier(rule.tier) === undefined) {
      throw new OverrideInputError('tier', `tier must be a configured tier, got "${rule.tier}"`);
    }
    return rule;
  }

  /**
   * An `apikey-name:<name>` pattern resolved to the bucket key of that API key's caller, `tenant:<t>:client:<c>`,
   * once, when the rule is set (a later change of the key file does not move it).
   */
  #byKeyName(rule: OverrideRule): OverrideRule {
    const name = rule.pattern.slice(API_KEY_NAME.length);
    const entry = this.#runtime().identifier.apiKeyNamed(name);
    if (entry === null) {
      throw new OverrideInputError(
        'pattern',
        'pattern apikey-name:<name> needs identity.apiKeys.file in the configuration',
      );
    }
    if (entry === undefined) {
      throw new OverrideInputError(
        'pattern',
        `pattern must name a key of the API key file, got no key named "${name}"`,
      );
    }
    if (entry.tenant === undefined || entry.client === undefined) {
      throw new OverrideInputError(
        'pattern',
        `pattern apikey-name:${name} needs tenant and client on that key (its bucket key is tenant:<t>:client:<c>)`,
      );
    }
    const identity = { tenant: entry.tenant, client: entry.client };
    const request = { method: 'GET', path: '/', headers: {}, remoteAddress: undefined, identity };
    const pattern = deriveKey('tenant-client', request, undefined);
    return Object.freeze({ ...rule, pattern, id: overrideId(pattern, rule.policy, rule.tier) });
  }

  #audit(change: OverrideChange, message: string): void {
    this.#logger.info(
      {
        audit: 'override',
        action: change.action,
        id: change.id,
        who: change.who,
        at: new Date(change.at).toISOString(),
        reason: change.reason,
        rule: change.rule,
      },
      message,
    );
  }
}

/**
 * The kinds the gateway's keys start with: identities (`tenant`, `apikey`, `ip`) and the key kinds of its classes.
 * `sluice/http` also keys by route parameter (`param:`) and key function (`custom:`), which the gateway never does.
 */
const NOT_GATEWAY_KINDS: readonly string[] = ['param', 'custom'];
const GATEWAY_KINDS: readonly string[] = KEY_PATTERN_KINDS.filter((k) => !NOT_GATEWAY_KINDS.includes(k));
/**
 * Refuses, before the library's checks, what only the gateway knows names no request: a kind it never keys by,
 * or a mistyped `apikey-name:` (the library knows no such kind and could not suggest it).
 *
 * @throws OverrideInputError naming `pattern`.
 */
function checkGatewayKind(pattern: string): void {
  const colon = pattern.indexOf(':');
  const kind = colon < 0 ? pattern.replace(/\*$/, '') : pattern.slice(0, colon);
  const starts = (kinds: readonly string[]) => kinds.some((k) => k.startsWith(kind));
  const notMade =
    colon < 0
      ? pattern.endsWith('*') && !starts(GATEWAY_KINDS) && starts(NOT_GATEWAY_KINDS)
      : NOT_GATEWAY_KINDS.includes(kind);
  if (notMade) {
    throw new OverrideInputError(
      'pattern',
      `pattern must name a key the gateway makes (the gateway keys no request by param: or custom:, the keys of sluice/http route parameters and key functions), got ${JSON.stringify(pattern)}`,
    );
  }
  const keyName = API_KEY_NAME.slice(0, -1);
  if (colon > 0 && kind !== keyName && !GATEWAY_KINDS.includes(kind) && closestName(kind, [keyName])) {
    throw new OverrideInputError(
      'pattern',
      `pattern must be a bucket key or apikey-name:<name> (an API key of the key file by its name); ${keyName}${pattern.slice(colon)} if ${kind} is a typo, got ${JSON.stringify(pattern)}`,
    );
  }
}

/** Patterns as the gateway's keys are written: tenants in lower case (`tenantId`), so `tenant:Acme` applies. */
const GATEWAY_KEYS = Object.freeze({ lowerCaseTenant: true });

/** A scope at the end of a rule id (`overrideId`): ` policy=<name>` or ` tier=<name>`. */
const SCOPE = / (?:policy|tier)=[^ ]*$/;

/**
 * The id a rule given by `id` was stored under when its pattern was written canonically, or `undefined` when that
 * is `id` itself or the pattern is not one.
 */
function canonicalId(id: string): string | undefined {
  const scope = SCOPE.exec(id);
  const pattern = scope === null ? id : id.slice(0, scope.index);
  let written: string;
  try {
    written = canonicalOverridePattern(pattern, GATEWAY_KEYS);
  } catch {
    return undefined;
  }
  return written === pattern ? undefined : written + (scope === null ? '' : scope[0]);
}

/**
 * The rule with its pattern as the gateway writes the key it names (`ip:::ffff:1.2.3.4` as `ip:1.2.3.4`), so that
 * it applies and one client has one rule id; the id follows the pattern.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` naming `pattern` for a pattern that would name no request.
 */
function canonical(rule: OverrideRule): OverrideRule {
  const pattern = canonicalOverridePattern(rule.pattern, GATEWAY_KEYS);
  if (pattern === rule.pattern) return rule;
  return Object.freeze({ ...rule, pattern, id: overrideId(pattern, rule.policy, rule.tier) });
}
