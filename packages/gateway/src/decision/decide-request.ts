import type { Decision } from 'sluice';
import type { HeaderPair } from 'sluice/http';
import { type AdmissionHost, type AdmissionRequest, admitRequest } from '../admission/admit-request.js';

/**
 * What the decision API and the Envoy service need of a running gateway (a `Gateway` is one): the same host the
 * proxy path admits with.
 */
export type DecisionHost = AdmissionHost;

/**
 * The original request, as the asking proxy describes it: an admission request without a socket, since the mTLS
 * exemption cannot apply to a connection that belongs to another proxy.
 */
export type RequestFacts = Omit<AdmissionRequest, 'socket'>;

/** The answer to give the proxy. */
export interface DecisionAnswer {
  /** 200 allow (or exempt), 401 invalid credentials, 429 limited, 503 store down with failure mode closed. */
  readonly status: 200 | 400 | 401 | 403 | 429 | 503;
  /** What happened, for logs: `allowed`, `limited`, `exempt_endpoint`, `public_auth_limited`... */
  readonly outcome: string;
  /** Headers for the proxy to copy onto its response. */
  readonly headers: readonly HeaderPair[];
  /** The `application/problem+json` body of a refusal. */
  readonly body: string | undefined;
  readonly decision: Decision | undefined;
  readonly key: string | undefined;
  readonly tier: string | undefined;
}

/**
 * Decides a request that another proxy describes, through the gateway's one admission function
 * ({@link admitRequest}), so the decision API and the proxy path cannot drift: the exempt endpoints and
 * development loopback, the failed-credentials bucket of the client IP (an empty bucket refuses before any
 * verification; a failed verification takes a token), identity (JWT, API key, identity headers when trusted),
 * the tier (unlimited is exempt), then the tier's and the matching endpoint rules' buckets, all or nothing, and
 * quota tracking of admitted tenants. mTLS exemption does not apply: the TLS connection is the proxy's.
 *
 * @param host - the running gateway.
 * @param facts - the original request.
 * @returns the answer; a denial is an answer, never an exception.
 */
export async function decideRequest(host: DecisionHost, facts: RequestFacts): Promise<DecisionAnswer> {
  const a = await admitRequest(host, facts);
  if (a.kind === 'deny') {
    return {
      status: a.status,
      outcome: a.outcome,
      headers: a.headers,
      body: a.body,
      decision: a.decision,
      key: a.key,
      tier: a.tier,
    };
  }
  if (a.kind === 'exempt') {
    return {
      status: 200,
      outcome: a.outcome,
      headers: NO_HEADERS,
      body: undefined,
      decision: undefined,
      key: a.key,
      tier: a.tier,
    };
  }
  // The proxy asking never says when its response ended: what the request holds (a concurrency slot) is given
  // back at once, as for a response whose end is unknown. Concurrency limits need the gateway's own proxy.
  a.observer?.end(UNKNOWN_END);
  return {
    status: 200,
    outcome: a.outcome,
    headers: a.headers,
    body: undefined,
    decision: a.decision,
    key: a.key,
    tier: a.tier,
  };
}

const NO_HEADERS: readonly HeaderPair[] = Object.freeze([]);
/** The end of a response the decision API never sees. */
const UNKNOWN_END = Object.freeze({ completed: false, status: 0, bytesSent: 0, bytesReceived: 0 });
