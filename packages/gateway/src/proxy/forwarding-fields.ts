import { compareSpelling, OTHER_SPELLING, SAME_SPELLING } from '../config/header-spelling.js';

/**
 * What the gateway does with a forwarding field a request carries:
 * - `written`: the gateway writes its own value, whoever sent one (`X-Forwarded-For` and `Forwarded` appended
 *   with the peer, `X-Real-IP` set to the client it resolved);
 * - `from-proxies`: passed on only from a trusted proxy, else removed (and `X-Forwarded-Proto` and
 *   `X-Forwarded-Host` then set by the gateway);
 * - `other-spelling`: another spelling of a field of either kind (`X_Real_IP`, `X.Forwarded.Prefix`), removed
 *   from every peer.
 */
export type ForwardingFieldKind = 'written' | 'from-proxies' | 'other-spelling';

/**
 * The forwarding fields, lower case as Node.js names request headers, with what the gateway does with each.
 * `from-proxies` holds what upstreams read as the client's scheme, host, port, path prefix or address, or route
 * by: Spring, ASP.NET and Werkzeug build redirects and links from `X-Forwarded-Port` and `-Prefix`, Rack takes
 * `X-Forwarded-Ssl: on` before `X-Forwarded-Proto`, IIS and older Symfony route by `X-Original-URL` and
 * `X-Rewrite-URL`, Rails reads `Client-IP`, and client address libraries read the fields CDNs write
 * (`CF-Connecting-IP`, `True-Client-IP`, `Fastly-Client-IP`) before `X-Forwarded-For`.
 */
export const FORWARDING_FIELDS: ReadonlyMap<string, Exclude<ForwardingFieldKind, 'other-spelling'>> = new Map(
  [
    ['forwarded', 'written'],
    ['x-real-ip', 'written'],
    ['x-forwarded-for', 'written'],
    ['x-forwarded-host', 'from-proxies'],
    ['x-forwarded-proto', 'from-proxies'],
    ['x-forwarded-port', 'from-proxies'],
    ['x-forwarded-prefix', 'from-proxies'],
    ['x-forwarded-server', 'from-proxies'],
    ['x-forwarded-ssl', 'from-proxies'],
    ['x-forwarded-scheme', 'from-proxies'],
    ['x-original-url', 'from-proxies'],
    ['x-rewrite-url', 'from-proxies'],
    ['client-ip', 'from-proxies'],
    ['x-client-ip', 'from-proxies'],
    ['true-client-ip', 'from-proxies'],
    ['cf-connecting-ip', 'from-proxies'],
    ['fastly-client-ip', 'from-proxies'],
    ['x-cluster-client-ip', 'from-proxies'],
  ] as const,
);

interface Field {
  readonly name: string;
  readonly kind: Exclude<ForwardingFieldKind, 'other-spelling'>;
}

// The fields by name length: a header whose length no field has (most of them) costs one array read.
const BY_LENGTH: (readonly Field[] | undefined)[] = [];
for (const [name, kind] of FORWARDING_FIELDS)
  BY_LENGTH[name.length] = [...(BY_LENGTH[name.length] ?? []), { name, kind }];

/**
 * Whether a request header is a forwarding field, and which kind: its own lower-case dash spelling gives the
 * field's kind; another spelling of it, the same name once ASCII upper case is read as lower case and every
 * character but a letter or a digit as `-` (`X_Real_IP`, `x.real.ip`, `X-Forwarded_Prefix`), gives
 * `other-spelling`. CGI-style servers read such a spelling as the field itself (PHP, WSGI and Rack map `-` and
 * `_` to `_`, lighttpd and older Apache map every other character to `_` too), so a client could set through one
 * spelling what the gateway replaced or removed under the other. A proxy that means to set a field writes its
 * dash spelling.
 *
 * Compared character by character against the fields of the same length: nothing is allocated, and a name of
 * another length is rejected at once (this runs for every request header).
 *
 * @param name - a request header name.
 * @returns the kind, or `undefined` for a header that is no forwarding field.
 */
export function forwardingField(name: string): ForwardingFieldKind | undefined {
  const candidates = BY_LENGTH[name.length];
  if (candidates === undefined) return undefined;
  for (let i = 0; i < candidates.length; i++) {
    const field = candidates[i];
    const match = compareSpelling(name, field.name);
    if (match === SAME_SPELLING) return field.kind;
    if (match === OTHER_SPELLING) return 'other-spelling';
  }
  return undefined;
}
