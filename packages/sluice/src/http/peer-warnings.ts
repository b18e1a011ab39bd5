import { readHeader } from './header-source.js';
import type { HttpLimiter } from './http-limiter.js';
import type { HeaderSource } from './types.js';

/**
 * Stable codes of the warnings the adapters give once per limiter. A warning is not an error: the request is
 * still decided, but the way it is keyed is probably not what the application wants.
 */
export const WarningCode = {
  /** A request arrived without a peer address, so every such client shares the one bucket `ip:unknown`. */
  NoPeerAddress: 'SLUICE_W_NO_PEER_ADDRESS',
  /** A forwarding header arrived from a peer that is not a trusted proxy, so it was ignored. */
  UntrustedForwarded: 'SLUICE_W_UNTRUSTED_FORWARDED',
} as const;

/** One of the values of {@link WarningCode}. */
export type WarningCode = (typeof WarningCode)[keyof typeof WarningCode];

/** Receives an adapter's warnings (the `warn` option of every adapter). */
export type WarnFunction = (message: string, code: WarningCode) => void;

/**
 * The default `warn`: `process.emitWarning` where there is a Node-compatible `process` (Node, Bun, Deno), so the
 * warning shows once on stderr, honours `--no-warnings` and reaches `process.on('warning')`; `console.warn`
 * elsewhere (Workers).
 */
export const emitWarning: WarnFunction = (message, code) => {
  const p = (globalThis as { process?: { emitWarning?: unknown } }).process;
  if (typeof p?.emitWarning === 'function') {
    (p.emitWarning as (m: string, o: { type: string; code: string }) => void)(message, {
      type: 'SluiceWarning',
      code,
    });
  } else console.warn(`${code}: ${message}`);
};

/**
 * The once-only checks of one limiter, shared by every adapter mounted over it. Adapters call
 * {@link PeerWarnings.check} only while {@link PeerWarnings.pending} is true, so once both questions are settled a
 * request pays one boolean test.
 */
export class PeerWarnings {
  /** False once both the missing-peer and the forwarding-header questions are settled. */
  pending = true;
  #noPeer = true;
  #forwarded = true;
  readonly #trustsPeer: (remoteAddress: string) => boolean;

  /** @param trustsPeer - whether forwarding headers from a peer are believed. */
  constructor(trustsPeer: (remoteAddress: string) => boolean) {
    this.#trustsPeer = trustsPeer;
  }

  /**
   * Looks at one request: warns (once) when it has no peer address, and settles the forwarding question at the
   * first request that carries `X-Forwarded-For` or `Forwarded`: from a trusted proxy it proves the proxy list
   * right, so no warning ever follows; from any other peer it gets one warning, since behind a proxy that is not
   * listed every client lands in the proxy's bucket.
   *
   * @param adapter - the adapter's name for the message (`express`).
   * @param remoteAddress - the peer address the adapter found.
   * @param headers - the request headers.
   * @param warn - where the warning goes.
   * @param hint - how this adapter supplies a missing peer address.
   */
  check(
    adapter: string,
    remoteAddress: string | undefined,
    headers: HeaderSource,
    warn: WarnFunction,
    hint: string,
  ): void {
    if (remoteAddress === undefined) {
      if (!this.#noPeer) return;
      this.#noPeer = false;
      this.pending = this.#forwarded;
      warn(
        `sluice/${adapter}: a request arrived without a peer address, so it and every other such request are ` +
          `keyed ip:unknown and share one bucket. ${hint}`,
        WarningCode.NoPeerAddress,
      );
      return;
    }
    if (!this.#forwarded) return;
    const name =
      readHeader(headers, 'x-forwarded-for') !== undefined
        ? 'X-Forwarded-For'
        : readHeader(headers, 'forwarded') !== undefined
          ? 'Forwarded'
          : undefined;
    if (name === undefined) return;
    this.#forwarded = false;
    this.pending = this.#noPeer;
    if (this.#trustsPeer(remoteAddress)) return;
    warn(
      `sluice/${adapter}: a request from ${remoteAddress} carried ${name}, but that peer is not in the ` +
        `trustedProxies of createHttpLimiter, so the header was ignored and the request was keyed by the peer. ` +
        `Behind a reverse proxy or load balancer, list its address in trustedProxies, or every client shares ` +
        `the proxy's bucket; without one, this was a client's own header and nothing needs to change.`,
      WarningCode.UntrustedForwarded,
    );
  }
}

const byLimiter = new WeakMap<HttpLimiter, PeerWarnings>();
const TRUSTS_ALL = (): boolean => true;

/**
 * The warning state of a limiter, created on first use: every adapter mounted over the same limiter shares it,
 * so a global and a route-level middleware warn once between them.
 *
 * @param limiter - the limiter the adapter decides with.
 */
export function peerWarningsOf(limiter: HttpLimiter): PeerWarnings {
  let w = byLimiter.get(limiter);
  if (w === undefined) {
    // A resolver that cannot tell whom it trusts gets no forwarding warning rather than a wrong one.
    w = new PeerWarnings(limiter.clientIp?.trustsPeer ?? TRUSTS_ALL);
    byLimiter.set(limiter, w);
  }
  return w;
}
