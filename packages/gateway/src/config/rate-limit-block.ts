import { type Document, isMap, isPair, isScalar } from 'yaml';

/** The design document's top-level `rate_limit:` block, taken out of the document, and why it is refused. */
export interface RateLimitBlock {
  /** Offset of the `rate_limit` key in the text, for its line and column. */
  readonly offset: number | undefined;
  /** The refusal, with the equivalent tier YAML. */
  readonly message: string;
}

/**
 * Finds the design document's `rate_limit: { algorithm: token_bucket, bucket_size, refill_rate, refill_interval }`
 * block at the top level and removes it from the document, so that the `${BURST_LIMIT}` and
 * `${REQUESTS_PER_MINUTE}` it quotes are not reported as unset variables and the schema does not call it an unknown
 * key: the one violation an operator sees is the refusal with the YAML that says the same. The block describes every
 * tier's minute bucket (capacity `burstLimit`, refilled at `requestsPerMinute / 60` per second), which tiers already
 * are, with a continuous refill at that rate.
 *
 * @param doc - the parsed document, before `${ENV}` substitution; changed in place.
 * @returns the refusal, or `undefined` when the document has no such block.
 */
export function takeRateLimitBlock(doc: Document): RateLimitBlock | undefined {
  const root = doc.contents;
  if (!isMap(root)) return undefined;
  const pair = root.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === 'rate_limit');
  if (pair === undefined) return undefined;
  const key = pair.key as { range?: [number, number, number] | null };
  const block = isMap(pair.value) ? pair.value : undefined;
  const source = (name: string): string | undefined => {
    const node = block?.get(name, true);
    return isScalar(node) ? String(node.source ?? node.value) : undefined;
  };
  const burst = source('bucket_size') ?? '<burst>';
  const rate = source('refill_rate');
  // `X / 60` per second is X per minute; a plain number per second is 60 times it.
  const perSecond = rate === undefined ? undefined : /^(.+?)\s*\/\s*60$/.exec(rate);
  const perMinute =
    perSecond?.[1] ??
    (rate !== undefined && /^[0-9]+$/.test(rate) ? String(Number(rate) * 60) : '<per minute>');
  const interval = source('refill_interval');
  const tiers = doc.getIn(['rateLimiting', 'tiers'], true);
  const limited = isMap(tiers)
    ? tiers.items
        .filter((p) => !(isMap(p.value) && p.value.get('unlimited') === true))
        .map((p) => String(isScalar(p.key) ? p.key.value : p.key))
    : [];
  root.delete('rate_limit');
  const finer = interval === undefined ? '' : `, finer than refill_interval ${interval}`;
  const already =
    limited.length === 0 ? '' : ` (tiers ${limited.join(', ')} already set them: remove rate_limit)`;
  return {
    offset: key.range?.[0],
    message:
      "is the design document's token bucket, not a gateway key: it describes every tier's minute bucket, " +
      `which the gateway already refills continuously at the same rate (requestsPerMinute / 60 per second${finer}). ` +
      'Write it per tier instead: ' +
      `rateLimiting: { tiers: { <tier>: { requestsPerMinute: ${perMinute}, burstLimit: ${burst} } } }${already}`,
  };
}
