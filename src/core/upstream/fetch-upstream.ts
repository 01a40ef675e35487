/**
 * The Web `fetch` as upstream transport: the default on Deno and Workers, and a comparison point on
 * Node (where undici `request` is several times faster).
 */
import type { Upstream } from '../contracts/upstream.ts';

export function fetchUpstream(fetchImpl: typeof fetch = fetch): Upstream {
  return async (req) => {
    const init: RequestInit & { duplex?: 'half' } = {
      method: req.method,
      headers: req.headers,
      body: req.body as BodyInit | null,
      signal: req.signal,
      redirect: 'manual',
    };
    if (req.body instanceof ReadableStream) init.duplex = 'half';
    const res = await fetchImpl(req.url, init);
    const headers: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      headers[k] = v;
    });
    // fetch decodes compressed bodies: the encoding and length no longer describe what we forward.
    if (headers['content-encoding'] !== undefined) {
      delete headers['content-encoding'];
      delete headers['content-length'];
    }
    return { status: res.status, headers, body: res.body };
  };
}
