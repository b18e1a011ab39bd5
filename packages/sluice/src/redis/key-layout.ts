import { invalidOption, type Policy } from '../core/index.js';
import { policyVersion } from '../core/policy-fingerprint.js';

/** The version of every concurrency policy's keys: never 8 hex digits, so never a rate policy's. */
const SLOTS_VERSION = 'c';

/**
 * Derives the Cluster hash tag from a bucket key. All checks of one call must yield the same tag on a Cluster;
 * the default uses the key itself.
 */
export type HashTagFunction = (key: string) => string;

/**
 * Names Redis keys for buckets.
 *
 * Default layout: `<prefix><policy>:<version>:{<key>}`. The hash tag is the bucket key between the braces, so
 * every policy of one key lands in the same Cluster slot and a request whose checks share a key (the usual case:
 * per-minute, per-hour and burst limits of one client) runs as one script call. With a `hashTag` function the
 * layout is `<prefix><policy>:<version>:{<tag>}:<key>`, for requests that mix keys (a tenant limit beside a user
 * limit: tag by tenant). Prefix and policy names contain no brace, so the first `{` is always the tag's: names
 * stay unambiguous whatever the key holds.
 *
 * `<version>` is 8 hex digits of the policy's definition (`policyVersion`): a policy whose limits change keeps
 * its name but gets new buckets, which start full, as on the memory store (D-R15). A concurrency policy's version
 * is `c` whatever its limit: its bucket counts the slots each store holds, not the slots left, so a reload that
 * changes the limit keeps the requests in flight counted and applies the new limit to them (D-G186).
 */
export class KeyLayout {
  /** The white-label prefix. */
  readonly prefix: string;
  /** The tag function, or undefined for the key itself. */
  readonly hashTag: HashTagFunction | undefined;
  readonly #heads = new WeakMap<Policy, string>();

  /**
   * @param prefix - the white-label prefix, without braces.
   * @param hashTag - optional tag function.
   * @throws SluiceError `ERR_INVALID_OPTION` when the prefix holds a brace.
   */
  constructor(prefix: string, hashTag?: HashTagFunction) {
    if (/[{}]/.test(prefix)) throw invalidOption('prefix', 'a string without { or }', prefix);
    this.prefix = prefix;
    this.hashTag = hashTag;
  }

  /**
   * The Redis key of a bucket.
   *
   * @throws SluiceError `ERR_INVALID_OPTION` when the policy name holds a brace, or when the hash tag function
   * returns an empty string or one with `}`.
   */
  key(policy: Policy, key: string): string {
    let head = this.#heads.get(policy);
    if (head === undefined) {
      if (/[{}]/.test(policy.name)) {
        throw invalidOption(
          `policy "${policy.name}" name`,
          'free of { and } for the Redis store',
          policy.name,
        );
      }
      const version = policy.concurrent > 0 ? SLOTS_VERSION : policyVersion(policy);
      head = `${this.prefix}${policy.bucketName ?? policy.name}:${version}:{`;
      this.#heads.set(policy, head);
    }
    if (this.hashTag === undefined) return `${head}${key}}`;
    const tag = this.hashTag(key);
    if (typeof tag !== 'string' || tag.length === 0 || tag.includes('}')) {
      throw invalidOption('hashTag(key)', 'a non-empty string without }', tag);
    }
    return `${head}${tag}}:${key}`;
  }
}
