/** Header rules for proxying: what goes upstream, what comes back. */

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

/** Upstream, the transport also sets these itself. */
const REQUEST_DROP = new Set([...HOP_BY_HOP, 'host', 'content-length', 'expect']);
const RESPONSE_DROP = new Set(HOP_BY_HOP);

function connectionTokens(value: string | null | undefined): string[] {
  if (!value) return [];
  return value
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t.length > 0 && t !== 'close' && t !== 'keep-alive');
}

/** The client's headers minus hop-by-hop ones (and any the client's `Connection` header names). */
export function upstreamRequestHeaders(incoming: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  const extra = connectionTokens(incoming.get('connection'));
  incoming.forEach((value, name) => {
    if (REQUEST_DROP.has(name) || (extra.length > 0 && extra.includes(name))) return;
    out[name] = value;
  });
  return out;
}

/** The engine's headers minus hop-by-hop ones; multi-valued headers joined (set-cookie kept apart). */
export function clientResponseHeaders(upstream: Record<string, string | string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  const conn = upstream.connection;
  const extra = connectionTokens(Array.isArray(conn) ? conn.join(',') : conn);
  for (const name in upstream) {
    if (RESPONSE_DROP.has(name) || (extra.length > 0 && extra.includes(name))) continue;
    const value = upstream[name];
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(name === 'set-cookie' ? '\n' : ', ') : value;
  }
  return out;
}

export function isEventStream(headers: Record<string, string>): boolean {
  return headers['content-type']?.includes('text/event-stream') === true;
}
