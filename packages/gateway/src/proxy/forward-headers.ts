import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { ExtraFields } from './extra-fields.js';
import { forwardingField } from './forwarding-fields.js';

/** Hop-by-hop fields (RFC 9110 7.6.1): they describe one connection and are never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Facts about the client connection that the forwarding headers record. */
export interface ForwardFacts {
  /** The direct peer's address. */
  readonly peer: string;
  /**
   * The client address the gateway resolved and keyed: behind a trusted proxy, the one its forwarding header
   * (`server.proxyHeader`) reports. `X-Real-IP` is set to it; default (or `undefined`) the peer.
   */
  readonly client?: string | undefined;
  /** `http` or `https`, as the client reached the gateway. */
  readonly proto: string;
  /** The Host the client asked for. */
  readonly host: string | undefined;
  /** The request id, set upstream under `requestIdHeader`. */
  readonly requestId: string;
  readonly requestIdHeader: string;
  /** Whether a header is removed before forwarding (identity headers, as the peer's trust decides). */
  readonly strip: (name: string) => boolean;
  /** Keep the client's Host instead of the upstream's. */
  readonly preserveHost: boolean;
  /** Keep `upgrade` and `connection: upgrade` (a WebSocket handshake the proxy passes through). */
  readonly upgrade?: boolean;
  /**
   * The peer is a trusted proxy: keep the forwarding fields it set (`X-Forwarded-Proto`, `-Host`, `-Port`,
   * `-Prefix`, the URL rewrite and CDN client fields); from anyone else they are replaced or removed.
   */
  readonly trustedPeer?: boolean;
}

/**
 * The request headers sent upstream: hop-by-hop fields and the fields the `Connection` header names removed,
 * `X-Forwarded-For` and `Forwarded` (RFC 7239) appended with the peer (a trusted proxy's) or set to it (anyone
 * else's, whose claimed chain is dropped), `X-Real-IP` set to the client the gateway
 * resolved (from every peer), `X-Forwarded-Proto` and `X-Forwarded-Host` set (kept only when a trusted proxy sent
 * them), the other fields an upstream reads as the client's port, path prefix, scheme or address, or routes by
 * (`X-Forwarded-Port`, `X-Original-URL`, `CF-Connecting-IP`: see `FORWARDING_FIELDS`) removed unless a trusted
 * proxy sent them, and the request id. Any other spelling of these fields (`X_Real_IP`, `x.forwarded.prefix`) is
 * removed whoever sent it: the gateway reads and writes only the dash spelling, and CGI-style upstreams read both
 * as one variable.
 *
 * @param incoming - the client's request headers.
 * @param facts - the connection facts.
 * @returns a new header object (the incoming one is not changed).
 */
export function upstreamRequestHeaders(
  incoming: IncomingHttpHeaders,
  facts: ForwardFacts,
): OutgoingHttpHeaders {
  const named = connectionTokens(incoming.connection);
  const out: OutgoingHttpHeaders = {};
  for (const name of Object.keys(incoming)) {
    if (HOP_BY_HOP.has(name) || named.has(name)) continue;
    if (name === 'host' && !facts.preserveHost) continue;
    if (facts.strip(name)) continue;
    const field = forwardingField(name);
    if (field !== undefined) {
      // The gateway writes these below, from what it read itself.
      if (field === 'written') continue;
      // From every peer, a trusted proxy's too: the gateway never believed such a spelling, and one a trusted
      // proxy passed on came from its client. A proxy that means to set a field sets the dash spelling.
      if (field === 'other-spelling') continue;
      // A client's own would let it pose as HTTPS, another host, port or path prefix, or another address, or
      // reach a path other than the one its request was counted under. Only a trusted proxy's stand.
      if (facts.trustedPeer !== true) continue;
    }
    out[name] = incoming[name];
  }
  // A trusted proxy's chain is appended to. A client's own is dropped: Express with `trust proxy` on and many
  // address helpers read the first address of the field, which would then be whatever the client wrote.
  const trusted = facts.trustedPeer === true;
  const xff = trusted ? incoming['x-forwarded-for'] : undefined;
  const prior = Array.isArray(xff) ? xff.join(', ') : xff;
  out['x-forwarded-for'] =
    prior === undefined || prior.trim() === '' ? facts.peer : `${prior}, ${facts.peer}`;
  const element = `for=${forwardedNode(facts.peer)};proto=${facts.proto}${facts.host === undefined ? '' : `;host=${quoteIfNeeded(facts.host)}`}`;
  const fwd = trusted ? incoming.forwarded : undefined;
  out.forwarded = fwd === undefined || fwd.trim() === '' ? element : `${fwd}, ${element}`;
  // Kept above only when a trusted proxy sent them.
  if (out['x-forwarded-proto'] === undefined) out['x-forwarded-proto'] = facts.proto;
  if (out['x-forwarded-host'] === undefined && facts.host !== undefined) out['x-forwarded-host'] = facts.host;
  // Upstreams behind NGINX take the client from X-Real-IP. The gateway never reads it (`server.proxyHeader` is
  // X-Forwarded-For or Forwarded), and a load balancer that writes only X-Forwarded-For (AWS ALB, most CDNs)
  // passes its client's own through: so it is the address the request was keyed by, whoever the peer is.
  out['x-real-ip'] = facts.client ?? facts.peer;
  out[facts.requestIdHeader] = facts.requestId;
  if (facts.upgrade === true) {
    out.connection = 'upgrade';
    out.upgrade = incoming.upgrade;
  }
  return out;
}

/**
 * The response headers sent to the client as a flat `[name, value, name, value, ...]` list for
 * `res.writeHead`: the upstream's fields without hop-by-hop ones, then the gateway's `extra` fields, which replace
 * any upstream field of the same name (compared case-insensitively). A flat list goes straight to Node's header
 * serializer: no header object is built and no `setHeader` validation pass runs per field.
 *
 * @param upstream - the upstream's response headers (lower-case names, as undici reports them).
 * @param extra - the fields the gateway adds (request id, rate-limit headers), a flat list of names and values.
 * @returns a new flat list.
 */
export function clientResponseHeaderList(
  upstream: Record<string, string | string[] | undefined>,
  extra: Readonly<ExtraFields>,
): (string | string[])[] {
  return fillHead([], upstream, extra);
}

/** The one list {@link headForWriteHead} refills. */
const head: (string | string[])[] = [];

/**
 * {@link clientResponseHeaderList} in one module-wide list, refilled by every call and valid until the next: for
 * `res.writeHead`, which reads a flat list within the call and keeps only the head it serializes from it, so a
 * response grows no list of its own (about 600 bytes a proxied response).
 *
 * @param upstream - the upstream's response headers (lower-case names, as undici reports them).
 * @param extra - the fields the gateway adds, a flat list of names and values.
 * @returns the shared list, at its exact length; to be passed on at once and never kept.
 */
export function headForWriteHead(
  upstream: Record<string, string | string[] | undefined>,
  extra: Readonly<ExtraFields>,
): (string | string[])[] {
  return fillHead(head, upstream, extra);
}

function fillHead(
  out: (string | string[])[],
  upstream: Record<string, string | string[] | undefined>,
  extra: Readonly<ExtraFields>,
): (string | string[])[] {
  const named = connectionTokens(upstream.connection);
  const replaced = lowerNames(extra);
  let n = 0;
  for (const name in upstream) {
    const value = upstream[name];
    if (value === undefined || HOP_BY_HOP.has(name) || named.has(name) || replaced.has(name)) continue;
    out[n++] = name;
    out[n++] = value;
  }
  for (let i = 0; i < extra.length; i++) out[n++] = extra[i] as string;
  // A shorter head than the last one leaves no stale fields behind.
  if (out.length !== n) out.length = n;
  return out;
}

// Extra header names come from the configuration (request id header, rate-limit header names), in the same order
// response after response: the lower-case set of the last list of names is kept and reused while they repeat, so
// a response costs one pass comparing names (interned strings: a pointer each) and no allocation.
let lastNames: readonly string[] = [];
let lastLower: ReadonlySet<string> = new Set();

function lowerNames(extra: Readonly<ExtraFields>): ReadonlySet<string> {
  const n = extra.length >> 1;
  if (n !== lastNames.length) return remember(extra);
  for (let i = 0; i < n; i++) if (lastNames[i] !== extra[2 * i]) return remember(extra);
  return lastLower;
}

function remember(extra: Readonly<ExtraFields>): ReadonlySet<string> {
  const names: string[] = [];
  for (let i = 0; i < extra.length; i += 2) names.push(extra[i] as string);
  lastNames = names;
  lastLower = new Set(names.map((n) => n.toLowerCase()));
  return lastLower;
}

// Most requests name no connection tokens: they share this empty set instead of allocating one each.
const NO_TOKENS: ReadonlySet<string> = new Set();

function connectionTokens(value: string | string[] | undefined): ReadonlySet<string> {
  // Upstreams mostly send `connection: keep-alive` (or close): neither names a field to remove.
  if (value === undefined || value === 'keep-alive' || value === 'close') return NO_TOKENS;
  const set = new Set<string>();
  for (const part of (Array.isArray(value) ? value.join(',') : value).split(',')) {
    const t = part.trim().toLowerCase();
    if (t !== '' && t !== 'close' && t !== 'keep-alive') set.add(t);
  }
  return set;
}

/** A `for=` node of RFC 7239: IPv6 in brackets and quotes, IPv4 bare. */
function forwardedNode(address: string): string {
  return address.includes(':') ? `"[${address}]"` : address;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Clients of one gateway send a handful of Host values: the last one's quoted form is kept, not tested again.
let lastHost = '';
let lastQuoted = '';

function quoteIfNeeded(value: string): string {
  if (value === lastHost) return lastQuoted;
  const quoted = TOKEN.test(value) ? value : `"${value.replace(/["\\]/g, '\\$&')}"`;
  lastHost = value;
  lastQuoted = quoted;
  return quoted;
}
