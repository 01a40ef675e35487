/**
 * Header rules for proxying: what goes upstream, what comes back.
 * - Upstream: hop-by-hop headers, `Host`, `Content-Length`, `Expect` (the transport sets its own),
 *   the client's `Cookie`, `Authorization` (the router sends --api-key or nothing) and
 *   `X-Data-Parallel-Rank` (the router sets it for a DP rank) are dropped. The peer is appended to
 *   `X-Forwarded-For` and, as `for=`, to `Forwarded`; `X-Forwarded-Proto` and `X-Forwarded-Host`
 *   are added from the request URL when the client sent none. All in one pass over the headers.
 * - Back to the client: hop-by-hop headers and the engine's `Access-Control-*` headers are dropped
 *   (the router's CORS policy is the only one).
 */

/** Hop-by-hop headers (RFC 9110 §7.6.1): never forwarded in either direction. */
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'trailers',
  'transfer-encoding',
  'upgrade',
];

/** Upstream: the transport sets these itself, and the client's credentials and DP rank stay here. */
const REQUEST_DROP = new Set([
  ...HOP_BY_HOP,
  'host',
  'content-length',
  'expect',
  'cookie',
  'authorization',
  'x-data-parallel-rank',
]);
const RESPONSE_DROP = new Set(HOP_BY_HOP);
const CORS_PREFIX = 'access-control-';

const NO_TOKENS: string[] = [];

/** The header names a `Connection` header lists (its usual `keep-alive` or `close` lists none). */
function connectionTokens(value: string | null | undefined): string[] {
  if (!value) return NO_TOKENS;
  const plain = value.length <= 10 ? value.toLowerCase() : '';
  if (plain === 'keep-alive' || plain === 'close') return NO_TOKENS;
  return value
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t.length > 0 && t !== 'close' && t !== 'keep-alive');
}

/** Where a request came from, for the forwarding headers. */
export interface ForwardedFrom {
  /** The peer's IP address; undefined where the runtime does not tell it (Workers). */
  peer: string | undefined;
  /** The request URL (X-Forwarded-Proto and X-Forwarded-Host come from it). */
  url: string;
}

/** An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) as the IPv4 address it is. */
export function plainAddress(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return mapped ? (mapped[1] as string) : address;
}

/** A `Forwarded` node (RFC 7239): IPv6 quoted and bracketed. */
function forwardedNode(address: string): string {
  return address.includes(':') ? `"[${address}]"` : address;
}

function appendList(existing: string | undefined, item: string): string {
  return existing === undefined || existing.trim() === '' ? item : `${existing}, ${item}`;
}

function addForwarding(out: Record<string, string>, from: ForwardedFrom): void {
  if (from.peer) {
    const peer = plainAddress(from.peer);
    out['x-forwarded-for'] = appendList(out['x-forwarded-for'], peer);
    out.forwarded = appendList(out.forwarded, `for=${forwardedNode(peer)}`);
  }
  const { url } = from;
  const colon = url.indexOf(':');
  if (out['x-forwarded-proto'] === undefined && colon > 0) out['x-forwarded-proto'] = url.slice(0, colon);
  if (out['x-forwarded-host'] === undefined && url.startsWith('//', colon + 1)) {
    const slash = url.indexOf('/', colon + 3);
    const host = slash < 0 ? url.slice(colon + 3) : url.slice(colon + 3, slash);
    if (host !== '') out['x-forwarded-host'] = host;
  }
}

/**
 * A request's headers as a plain object with lower-case names, where the runtime holds them so
 * (Node's `IncomingMessage.headers`: a repeated header joined, `set-cookie` an array). Reading it
 * skips building a `Headers` object.
 */
export type RawRequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** One header of a raw header object (the name lower-cased if the caller did not). */
export function rawHeader(raw: RawRequestHeaders, name: string): string | undefined {
  const value = raw[name] ?? raw[name.toLowerCase()];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * The headers bound upstream: the client's minus the dropped ones (and any its `Connection` header
 * names), plus the forwarding headers when `from` is given. `incoming` is a `Headers` object or
 * the runtime's raw headers (HTTP/2 pseudo-headers skipped).
 */
export function upstreamRequestHeaders(
  incoming: Headers | RawRequestHeaders,
  from?: ForwardedFrom,
): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof incoming.get === 'function') {
    const headers = incoming as Headers;
    const extra = connectionTokens(headers.get('connection'));
    headers.forEach((value, name) => {
      if (REQUEST_DROP.has(name) || (extra.length > 0 && extra.includes(name))) return;
      out[name] = value;
    });
  } else {
    const raw = incoming as RawRequestHeaders;
    const extra = connectionTokens(rawHeader(raw, 'connection'));
    for (const name in raw) {
      if (name.charCodeAt(0) === 0x3a || REQUEST_DROP.has(name)) continue;
      if (extra.length > 0 && extra.includes(name)) continue;
      const value = raw[name];
      if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
    }
  }
  if (from) addForwarding(out, from);
  return out;
}

/**
 * The engine's headers minus hop-by-hop and `Access-Control-*` ones; multi-valued headers joined
 * (set-cookie kept apart).
 */
export function clientResponseHeaders(upstream: Record<string, string | string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  const conn = upstream.connection;
  const extra = connectionTokens(Array.isArray(conn) ? conn.join(',') : conn);
  for (const name in upstream) {
    if (RESPONSE_DROP.has(name) || name.startsWith(CORS_PREFIX)) continue;
    if (extra.length > 0 && extra.includes(name)) continue;
    const value = upstream[name];
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(name === 'set-cookie' ? '\n' : ', ') : value;
  }
  return out;
}

export function isEventStream(headers: Record<string, string>): boolean {
  return headers['content-type']?.includes('text/event-stream') === true;
}
