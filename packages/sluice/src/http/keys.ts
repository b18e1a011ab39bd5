import { invalidOption } from '../core/index.js';
import { detached } from './detached-string.js';
import { ADDRESS_CACHE_LIMIT, ipKeyOf } from './ip-address.js';
import { sha256Base64Url } from './key-hash.js';
import type { HttpRequestInfo, Identity } from './types.js';

/**
 * The key kinds of the design ticket and the gateway contract:
 * - `ip`: the client IP (IPv6 by /64, IPv4-mapped unmapped);
 * - `principal`: the authenticated actor;
 * - `tenant-client`: tenant and client (the contract's primary key);
 * - `tenant-user`: tenant and user;
 * - `api-key`: a SHA-256 hash of the API key, never the key;
 * - `device`: device id, else token id (the ticket's "device or token");
 * - `connection`, `agent`, `human`, `host`: the identity field of that name;
 * - `webhook`: the route parameter `webhook_id` (incoming webhooks are anonymous; the path names the bucket);
 * - `caller`: the gateway's key hierarchy: `tenant-client`, else `tenant-user`, else `api-key`, else `ip`.
 * Every kind but `ip` falls back to the client IP when its value is missing: an anonymous caller never shares a
 * bucket with everyone else and never borrows a principal's bucket.
 */
export type KeyKind =
  | 'ip'
  | 'principal'
  | 'tenant-client'
  | 'tenant-user'
  | 'api-key'
  | 'device'
  | 'connection'
  | 'agent'
  | 'webhook'
  | 'human'
  | 'host'
  | 'caller';

/** All key kinds, for validation and table-driven tests. */
export const KEY_KINDS: readonly KeyKind[] = Object.freeze([
  'ip',
  'principal',
  'tenant-client',
  'tenant-user',
  'api-key',
  'device',
  'connection',
  'agent',
  'webhook',
  'human',
  'host',
  'caller',
]);

/**
 * A custom key: return the bucket identity, or `undefined` for the client-IP fallback. The result is used under
 * the prefix `custom:`, escaped and bounded like every other key.
 */
export type KeyFunction = (request: HttpRequestInfo, clientIp: string | undefined) => string | undefined;

/** How a rule keys its buckets: a kind, a route parameter (`{ param: 'orgId' }`), or a function. */
export type KeySpec = KeyKind | { readonly param: string } | KeyFunction;

/** A compiled key spec: gives the key of a request given its client IP key. */
export type KeyDeriver = (
  request: HttpRequestInfo,
  ipKey: string,
  clientIp: string | undefined,
  identity?: Identity,
) => string;

/**
 * Escapes the separator so that values cannot forge another key's shape (`a:b` + `c` vs `a` + `b:c`). Only `%`
 * and `:` are touched; ordinary ids pass through without allocation.
 */
export function escapeKeyPart(value: string): string {
  if (value.indexOf(':') < 0 && value.indexOf('%') < 0) return value;
  return value.replaceAll('%', '%25').replaceAll(':', '%3A');
}

/**
 * The IP part of keys: `ip:<address or /64>`, or `ip:unknown` when the peer has no IP address (a Unix socket),
 * so such requests share one bucket rather than escape limiting.
 *
 * @param clientIp - the resolved client IP.
 */
export function ipKey(clientIp: string | undefined): string {
  if (clientIp === undefined) return 'ip:unknown';
  let key = ipKeys.get(clientIp);
  if (key === undefined) {
    const k = ipKeyOf(clientIp);
    key = k === undefined ? 'ip:unknown' : `ip:${k}`;
    // Bounded like the address caches: cleared at the cap, so a flood of addresses cannot grow it.
    if (ipKeys.size >= ADDRESS_CACHE_LIMIT) ipKeys.clear();
    ipKeys.set(detached(clientIp), key);
  }
  return key;
}

/**
 * The IP part of a request's keys: the caller's {@link HttpRequestInfo.clientIpKey} when it gave one with its
 * `clientIp`, else {@link ipKey} of the resolved address.
 *
 * @param request - the request.
 * @param clientIp - its resolved client IP.
 */
export function requestIpKey(request: HttpRequestInfo, clientIp: string | undefined): string {
  const given = request.clientIpKey;
  return given !== undefined && request.clientIp !== undefined ? given : ipKey(clientIp);
}

/** Client IP to its finished key string: the hot path then builds no string for a returning client. */
const ipKeys = new Map<string, string>();

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function identityField(field: keyof Identity & string, prefix: string): KeyDeriver {
  return (req, ip, _clientIp, identity = req.identity) => {
    const v = str(identity?.[field]);
    return v === undefined ? ip : `${prefix}:${escapeKeyPart(v)}`;
  };
}

function tenantClientKey(id: Identity | undefined): string | undefined {
  const t = str(id?.tenant);
  const c = str(id?.client);
  return t === undefined || c === undefined
    ? undefined
    : `tenant:${escapeKeyPart(t)}:client:${escapeKeyPart(c)}`;
}

function tenantUserKey(id: Identity | undefined): string | undefined {
  const t = str(id?.tenant);
  const u = str(id?.user);
  return t === undefined || u === undefined
    ? undefined
    : `tenant:${escapeKeyPart(t)}:user:${escapeKeyPart(u)}`;
}

function apiKeyKey(id: Identity | undefined): string | undefined {
  const k = str(id?.apiKey);
  return k === undefined ? undefined : `apikey:${sha256Base64Url(k)}`;
}

/**
 * Compiles a key spec once, so a request only reads fields and concatenates.
 *
 * @param spec - the key spec.
 * @param option - the option path for error messages.
 * @throws SluiceError `ERR_INVALID_OPTION` for an unknown kind or an invalid parameter name.
 */
export function compileKey(spec: KeySpec, option = 'key'): KeyDeriver {
  if (typeof spec === 'function') {
    return (req, ip, clientIp, identity = req.identity) => {
      // The identity may come from an `identify` hook: the function sees it on the request, as documented.
      const v = spec(identity === req.identity ? req : { ...req, identity }, clientIp);
      return typeof v === 'string' && v !== '' ? `custom:${escapeKeyPart(v)}` : ip;
    };
  }
  if (typeof spec === 'object' && spec !== null && typeof (spec as { param?: unknown }).param === 'string') {
    const name = (spec as { param: string }).param;
    if (name === '') throw invalidOption(`${option}.param`, 'a non-empty route parameter name', name);
    const prefix = `param:${escapeKeyPart(name)}`;
    return (req, ip) => {
      const v = str(req.params?.[name]);
      return v === undefined ? ip : `${prefix}:${escapeKeyPart(v)}`;
    };
  }
  switch (spec) {
    case 'ip':
      return (_req, ip) => ip;
    case 'principal':
      return identityField('principal', 'principal');
    case 'tenant-client':
      return (req, ip, _c, identity = req.identity) => tenantClientKey(identity) ?? ip;
    case 'tenant-user':
      return (req, ip, _c, identity = req.identity) => tenantUserKey(identity) ?? ip;
    case 'api-key':
      return (req, ip, _c, identity = req.identity) => apiKeyKey(identity) ?? ip;
    case 'caller':
      return (_req, ip, _c, id = _req.identity) => {
        if (id === undefined) return ip;
        return tenantClientKey(id) ?? tenantUserKey(id) ?? apiKeyKey(id) ?? ip;
      };
    case 'device':
      return (req, ip, _c, identity = req.identity) => {
        const d = str(identity?.device);
        if (d !== undefined) return `device:${escapeKeyPart(d)}`;
        const t = str(identity?.token);
        return t === undefined ? ip : `token:${escapeKeyPart(t)}`;
      };
    case 'connection':
      return identityField('connection', 'connection');
    case 'agent':
      return identityField('agent', 'agent');
    case 'human':
      return identityField('human', 'human');
    case 'host':
      return identityField('host', 'host');
    case 'webhook':
      return (req, ip) => {
        const v = str(req.params?.webhook_id);
        return v === undefined ? ip : `webhook:${escapeKeyPart(v)}`;
      };
    default:
      throw invalidOption(option, `one of ${KEY_KINDS.join(', ')}, { param: name } or a function`, spec);
  }
}

/**
 * Derives the bucket key of a request for one key spec: the standalone form of what {@link HttpLimiter} does
 * per rule (the gateway may call it directly).
 *
 * @param spec - a key kind, `{ param }` or a function.
 * @param request - the request (identity and params are read).
 * @param clientIp - the resolved client IP (from a {@link ClientIpResolver}).
 * @returns the key, for example `principal:alice`, `tenant:acme:client:web` or `ip:2001:db8::/64`.
 * @throws SluiceError `ERR_INVALID_OPTION` for an invalid spec.
 *
 * @example
 * ```ts
 * deriveKey('principal', { method: 'GET', path: '/', headers: {}, remoteAddress: undefined }, '192.0.2.1');
 * // 'ip:192.0.2.1' (anonymous fallback)
 * ```
 */
export function deriveKey(spec: KeySpec, request: HttpRequestInfo, clientIp: string | undefined): string {
  return compileKey(spec)(request, requestIpKey(request, clientIp), clientIp);
}
