import type { OverrideApplier } from './apply-overrides.js';
import { compileKey, requestIpKey } from './keys.js';
import type { RulePlans } from './rule-plans.js';
import type { HttpRequestInfo, Identity, Verdict } from './types.js';
import type { VerdictWriter } from './verdicts.js';

const callerKey = compileKey('caller');

/**
 * Exempt answers that still heed an operator's blocks: an exempt endpoint, by the client's address, and a caller of
 * an exempt (unlimited) tier, by its key, its tenant or its address. An exemption spares a request the limits; it
 * never lifts a block, or a leaked key of an unlimited tier could not be stopped. Limit and unlimited rules have no
 * bucket of an exempt request to act on and leave it exempt.
 */
export class ExemptBlocks {
  readonly #tiers: ReadonlySet<string> | undefined;
  readonly #overrides: OverrideApplier | undefined;
  readonly #plans: RulePlans;
  readonly #writer: VerdictWriter;
  readonly #clock: () => number;

  /**
   * @param tiers - the exempt tiers (`exempt.tiers`), if any.
   * @param overrides - the limiter's overrides, if any.
   * @param plans - for the bucket key prefix and length bound, as the checks build keys.
   * @param writer - writes the verdicts.
   * @param clock - wall-clock epoch milliseconds.
   */
  constructor(
    tiers: ReadonlySet<string> | undefined,
    overrides: OverrideApplier | undefined,
    plans: RulePlans,
    writer: VerdictWriter,
    clock: () => number,
  ) {
    this.#tiers = tiers;
    this.#overrides = overrides;
    this.#plans = plans;
    this.#writer = writer;
    this.#clock = clock;
  }

  /**
   * The verdict of a caller of an exempt tier (exempt, or blocked), or `undefined` for any other caller.
   *
   * @param req - the request.
   * @param ip - the resolved client IP.
   * @param identity - the caller.
   */
  ofTier(req: HttpRequestInfo, ip: string | undefined, identity: Identity | undefined): Verdict | undefined {
    const tier = identity?.tier;
    if (this.#tiers === undefined || typeof tier !== 'string' || !this.#tiers.has(tier)) return undefined;
    return this.exempt('tier', req, ip, identity);
  }

  /**
   * The exempt verdict of a request, or the 403 or 429 of a block that names it.
   *
   * @param reason - why it is exempt (`tier`, `endpoint`).
   * @param req - the request.
   * @param ip - the resolved client IP.
   * @param identity - the caller of an exempt tier; `undefined` for an exempt endpoint (nobody is identified
   *   there, so only the address can name the client).
   */
  exempt(reason: string, req: HttpRequestInfo, ip: string | undefined, identity?: Identity): Verdict {
    const index = this.#overrides?.current();
    if (index === undefined) return this.#writer.exempt(reason, identity);
    const ipk = requestIpKey(req, ip);
    const key = this.#plans.bucketKey(identity === undefined ? ipk : callerKey(req, ipk, ip, identity));
    // No policy name: a rule scoped to a policy concerns that policy's bucket, which an exempt request has none of.
    const e = index.find(key, '', identity?.tier, ip, this.#clock, identity?.tenant);
    if (e === undefined || e.effect !== 'block') return this.#writer.exempt(reason, identity);
    return this.#writer.blocked(req, e.rule, this.#plans.unprefixed(key), identity, ip, this.#clock());
  }
}
