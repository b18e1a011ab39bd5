import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The signature of a webhook body: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. Signing the timestamp
 * with the body lets a receiver refuse replays of an old delivery.
 *
 * @param secret - the shared secret.
 * @param timestamp - Unix seconds of the attempt.
 * @param body - the exact request body.
 * @returns the header value.
 *
 * @example
 * ```ts
 * signWebhook('s3cret', 1764547200, '{"type":"quota.threshold_crossed"}'); // 't=1764547200,v1=9f2c...'
 * ```
 */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return `t=${timestamp},v1=${mac}`;
}

/** Options of {@link verifyWebhookSignature}. */
export interface VerifyWebhookOptions {
  /** Oldest accepted timestamp, in seconds before `nowSeconds`. Default 300. */
  readonly toleranceSeconds?: number;
  /** The receiver's current Unix time in seconds. Default now. */
  readonly nowSeconds?: number;
}

/**
 * Checks a signature made by {@link signWebhook}, in constant time, for receivers of quota webhooks.
 *
 * @param secret - the shared secret.
 * @param header - the signature header as received (may be null or malformed: then false).
 * @param body - the exact raw body as received.
 * @returns true when the MAC matches and the timestamp is within the tolerance.
 *
 * @example
 * ```ts
 * if (!verifyWebhookSignature(secret, req.headers['x-sluice-signature'], rawBody)) res.writeHead(401);
 * ```
 */
export function verifyWebhookSignature(
  secret: string,
  header: string | null | undefined,
  body: string,
  options: VerifyWebhookOptions = {},
): boolean {
  if (typeof header !== 'string') return false;
  const m = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(header.trim());
  if (m === null) return false;
  const t = Number(m[1]);
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (options.toleranceSeconds ?? 300)) return false;
  const expected = Buffer.from(signWebhook(secret, t, body).slice(`t=${t},v1=`.length), 'hex');
  return timingSafeEqual(expected, Buffer.from(m[2], 'hex'));
}
