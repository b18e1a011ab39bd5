import { describe, expect, it } from 'vitest';
import {
  clientResponseHeaderList,
  type ForwardFacts,
  headForWriteHead,
  upstreamRequestHeaders,
} from './forward-headers.js';

function pairs(list: (string | string[])[]): [string, string | string[]][] {
  const out: [string, string | string[]][] = [];
  for (let i = 0; i < list.length; i += 2) out.push([list[i] as string, list[i + 1]]);
  return out;
}

describe('clientResponseHeaderList', () => {
  it('drops hop-by-hop fields and the fields Connection names, keeps the rest with repeated values', () => {
    const list = clientResponseHeaderList(
      {
        'content-type': 'text/plain',
        connection: 'keep-alive, x-secret',
        'keep-alive': 'timeout=5',
        'transfer-encoding': 'chunked',
        'x-secret': 'hidden',
        'set-cookie': ['a=1', 'b=2'],
        'x-gone': undefined,
      },
      [],
    );
    expect(pairs(list)).toEqual([
      ['content-type', 'text/plain'],
      ['set-cookie', ['a=1', 'b=2']],
    ]);
  });

  it("appends the gateway's fields, which replace an upstream field of the same name in any case", () => {
    const list = clientResponseHeaderList(
      { 'x-request-id': 'upstream-id', ratelimit: 'upstream', 'content-length': '2', connection: 'close' },
      ['x-request-id', 'gw-id', 'RateLimit', '"default";r=9;t=60'],
    );
    expect(pairs(list)).toEqual([
      ['content-length', '2'],
      ['x-request-id', 'gw-id'],
      ['RateLimit', '"default";r=9;t=60'],
    ]);
  });

  it("replaces by each call's own field names, when they change from one call to the next and back", () => {
    const upstream = { 'x-request-id': 'up', ratelimit: 'up', 'x-ratelimit-limit': 'up', date: 'd' };
    const allowed = ['x-request-id', 'a', 'RateLimit', 'r', 'X-RateLimit-Limit', '9'];
    const exempt = ['x-request-id', 'e'];
    const names = (extra: string[]) =>
      pairs(clientResponseHeaderList({ ...upstream }, extra)).map(([k]) => k);
    for (let i = 0; i < 3; i++) {
      expect(names(allowed)).toEqual(['date', 'x-request-id', 'RateLimit', 'X-RateLimit-Limit']);
      expect(names(allowed)).toEqual(['date', 'x-request-id', 'RateLimit', 'X-RateLimit-Limit']);
      expect(names(exempt)).toEqual(['ratelimit', 'x-ratelimit-limit', 'date', 'x-request-id']);
      expect(names(['x-request-id', 'x', 'RateLimit', 'r'])).toEqual([
        'x-ratelimit-limit',
        'date',
        'x-request-id',
        'RateLimit',
      ]);
    }
  });
});

describe('headForWriteHead', () => {
  it('gives what clientResponseHeaderList gives, in one list refilled call after call at its exact length', () => {
    const long = { 'content-type': 'text/plain', 'x-a': '1', 'x-b': ['2', '3'], connection: 'close' };
    const short = { 'content-type': 'text/plain' };
    const extra = ['x-request-id', 'gw', 'RateLimit', 'r'];
    const first = headForWriteHead(long, extra);
    expect(first).toEqual(clientResponseHeaderList(long, extra));
    const second = headForWriteHead(short, extra);
    expect(second).toBe(first);
    expect(second).toEqual(['content-type', 'text/plain', 'x-request-id', 'gw', 'RateLimit', 'r']);
    expect(headForWriteHead(long, ['x-request-id', 'e'])).toEqual(
      clientResponseHeaderList(long, ['x-request-id', 'e']),
    );
  });
});

describe('upstreamRequestHeaders', () => {
  const facts = (trustedPeer: boolean, client?: string): ForwardFacts => ({
    peer: '198.51.100.7',
    client,
    proto: 'http',
    host: 'api.example',
    requestId: 'r1',
    requestIdHeader: 'x-request-id',
    strip: () => false,
    preserveHost: false,
    trustedPeer,
  });
  const spoofed = {
    'x-real-ip': '1.2.3.4',
    'x-original-url': '/system/airgap/seal',
    'x-rewrite-url': '/admin',
    accept: 'text/plain',
  };

  it("sets X-Real-IP to a client's own address and drops the URL rewrite fields it sent", () => {
    const out = upstreamRequestHeaders(spoofed, facts(false));
    expect(out['x-real-ip']).toBe('198.51.100.7');
    expect(out['x-original-url']).toBeUndefined();
    expect(out['x-rewrite-url']).toBeUndefined();
    expect(out.accept).toBe('text/plain');
  });

  // Express with `trust proxy` on, and many address helpers, take the first address of X-Forwarded-For.
  it("replaces a client's own X-Forwarded-For and Forwarded chain, and appends to a trusted proxy's", () => {
    const chain = { 'x-forwarded-for': '6.6.6.6, 10.0.0.1', forwarded: 'for=6.6.6.6;proto=https' };
    const own = upstreamRequestHeaders(chain, facts(false));
    expect(own['x-forwarded-for']).toBe('198.51.100.7');
    expect(own.forwarded).toBe('for=198.51.100.7;proto=http;host=api.example');
    const proxied = upstreamRequestHeaders(chain, facts(true, '10.0.0.1'));
    expect(proxied['x-forwarded-for']).toBe('6.6.6.6, 10.0.0.1, 198.51.100.7');
    expect(proxied.forwarded).toBe('for=6.6.6.6;proto=https, for=198.51.100.7;proto=http;host=api.example');
  });

  it('keeps the URL rewrite fields a trusted proxy in front set', () => {
    const out = upstreamRequestHeaders(spoofed, facts(true, '203.0.113.5'));
    expect(out['x-original-url']).toBe('/system/airgap/seal');
    expect(out['x-rewrite-url']).toBe('/admin');
  });

  // A load balancer that writes only X-Forwarded-For (AWS ALB, most CDNs) passes its client's X-Real-IP on.
  it('sets X-Real-IP to the client it resolved behind a trusted proxy, not the one the request names', () => {
    expect(upstreamRequestHeaders(spoofed, facts(true, '203.0.113.5'))['x-real-ip']).toBe('203.0.113.5');
    // No address resolved (a peer without one): the peer, as keyed.
    expect(upstreamRequestHeaders(spoofed, facts(true))['x-real-ip']).toBe('198.51.100.7');
    expect(upstreamRequestHeaders({}, facts(true, '203.0.113.5'))['x-real-ip']).toBe('203.0.113.5');
  });

  // Spring, ASP.NET and Werkzeug build links from the port and prefix fields, Rack takes X-Forwarded-Ssl before
  // X-Forwarded-Proto, and client address libraries read the CDN fields before X-Forwarded-For.
  const proxyOnly = {
    'x-forwarded-port': '8443',
    'x-forwarded-prefix': '/evil',
    'x-forwarded-server': 'evil.example',
    'x-forwarded-ssl': 'on',
    'x-forwarded-scheme': 'https',
    'client-ip': '6.6.6.1',
    'x-client-ip': '6.6.6.2',
    'true-client-ip': '6.6.6.3',
    'cf-connecting-ip': '6.6.6.4',
    'fastly-client-ip': '6.6.6.5',
    'x-cluster-client-ip': '6.6.6.6',
  };

  it('drops the port, prefix, server, scheme and CDN client fields a client sent', () => {
    const out = upstreamRequestHeaders({ ...proxyOnly, accept: 'text/plain' }, facts(false));
    for (const name of Object.keys(proxyOnly)) expect(out[name], name).toBeUndefined();
    expect(out['x-real-ip']).toBe('198.51.100.7');
    expect(out.accept).toBe('text/plain');
  });

  it('keeps the port, prefix, server, scheme and CDN client fields a trusted proxy sent', () => {
    const out = upstreamRequestHeaders(proxyOnly, facts(true, '6.6.6.4'));
    for (const [name, value] of Object.entries(proxyOnly)) expect(out[name], name).toBe(value);
  });

  // lighttpd and older Apache CGI read every character but letters and digits as `_`: `X.Real.IP` is X_REAL_IP.
  it.each([
    ['an untrusted client', false],
    ['a trusted proxy', true],
  ])('drops the dotted and other spellings of every field from %s', (_who, trusted) => {
    const odd = {
      'x.real.ip': '6.6.6.1',
      'X.Forwarded.Prefix': '/evil',
      'x-forwarded.port': '8443',
      true_client_ip: '6.6.6.3',
      'CF-Connecting-IP': '6.6.6.4',
      'x~client~ip': '6.6.6.2',
      "x'original'url": '/admin',
      accept: 'text/plain',
    };
    const out = upstreamRequestHeaders(odd, facts(trusted, trusted ? '203.0.113.5' : undefined));
    expect(Object.keys(out).filter((n) => n in odd)).toEqual(['accept']);
    expect(out['x-real-ip']).toBe(trusted ? '203.0.113.5' : '198.51.100.7');
  });

  // CGI-style servers (PHP, WSGI, Rack) read `X_Real_IP` and `X-Real-IP` alike, as HTTP_X_REAL_IP.
  const lookAlikes = {
    x_real_ip: '6.6.6.6',
    x_original_url: '/admin',
    x_rewrite_url: '/admin',
    x_forwarded_host: 'evil.example',
    x_forwarded_proto: 'https',
    x_forwarded_for: '6.6.6.6',
    'x-forwarded_for': '6.6.6.7',
    'x_forwarded-host': 'evil.example',
    // Node.js gives lower-case names; a caller that does not must not get the other cases through either.
    'X-Real_IP': '6.6.6.8',
    Forwarded: 'for=6.6.6.6',
    'X-FORWARDED-PROTO': 'https',
    x_custom_field: 'kept',
    accept: 'text/plain',
  };
  const forwarding = [
    'x-real-ip',
    'x-original-url',
    'x-rewrite-url',
    'x-forwarded-host',
    'x-forwarded-proto',
    'x-forwarded-for',
    'forwarded',
  ];

  it.each([
    ['an untrusted client', false],
    ['a trusted proxy', true],
  ])('drops every other spelling of a forwarding field from %s', (_who, trusted) => {
    const out = upstreamRequestHeaders(lookAlikes, facts(trusted));
    const kept = Object.keys(out).filter((n) => forwarding.includes(n.toLowerCase().replaceAll('_', '-')));
    // Only the fields the gateway wrote itself, in their one spelling.
    const written = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-real-ip'];
    expect(kept.sort()).toEqual(written);
    expect(out['x-forwarded-for']).toBe('198.51.100.7');
    expect(out.forwarded).toBe('for=198.51.100.7;proto=http;host=api.example');
    expect(out['x-forwarded-host']).toBe('api.example');
    expect(out['x-forwarded-proto']).toBe('http');
    expect(out['x-real-ip']).toBe('198.51.100.7');
    expect(out.x_custom_field).toBe('kept');
    expect(out.accept).toBe('text/plain');
  });

  it("keeps a trusted proxy's own fields while dropping the other spellings sent beside them", () => {
    const out = upstreamRequestHeaders({ ...spoofed, ...lookAlikes }, facts(true, '203.0.113.5'));
    expect(out['x-real-ip']).toBe('203.0.113.5');
    expect(out['x-original-url']).toBe('/system/airgap/seal');
    expect(out['x-rewrite-url']).toBe('/admin');
    expect(out.x_real_ip).toBeUndefined();
    expect(out.x_original_url).toBeUndefined();
  });

  it('passes names that only look close (another length, another field) untouched', () => {
    // Digits are not separators: `x1real1ip` is no spelling of X-Real-IP.
    const near = {
      'x-real-ipv6': 'a',
      x_forwarded_ports: '443',
      'x-forwarded-by': 'b',
      forwarded_x: 'c',
      x1real1ip: 'd',
      'client-ips': 'e',
      'x-forwarded-prefixes': 'f',
    };
    const out = upstreamRequestHeaders(near, facts(false));
    for (const [k, v] of Object.entries(near)) expect(out[k], k).toBe(v);
  });
});
