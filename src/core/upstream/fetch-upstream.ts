/**
 * The Web `fetch` as upstream transport: the one on Workers, and a comparison point on Node and
 * Deno (where undici's dispatch API costs less CPU per request). As with undici, a small answer
 * that announced its length and is not an event stream is read whole before it is handed over:
 * one chunk, no relay stream to the client; a body that breaks after its status is an
 * UpstreamBodyError.
 */
import { type Upstream, UpstreamBodyError } from '../contracts/upstream.ts';
import { abortSignalOf } from './call-signal.ts';

/** Bodies up to this size with a content-length (not SSE, not re-encoded) are read whole. */
const BUFFER_LIMIT_BYTES = 1 << 20;

async function readWhole(res: Response): Promise<Uint8Array> {
  try {
    return new Uint8Array(await res.arrayBuffer());
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    throw new UpstreamBodyError(`the body broke after status ${res.status}: ${detail}`, res.status, {
      cause: err,
    });
  }
}

export function fetchUpstream(fetchImpl: typeof fetch = fetch): Upstream {
  return async (req) => {
    const init: RequestInit & { duplex?: 'half' } = {
      method: req.method,
      headers: req.headers,
      body: req.body as BodyInit | null,
      signal: abortSignalOf(req.signal),
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
    const length = Number(headers['content-length'] ?? Number.NaN);
    const sse = headers['content-type']?.includes('text/event-stream') === true;
    if (res.body !== null && !sse && length > 0 && length <= BUFFER_LIMIT_BYTES) {
      // `arrayBuffer` shows no chunks: the body's idle limit runs from its head to its end.
      req.bodyWatch?.bodyProgress();
      return { status: res.status, headers, body: await readWhole(res) };
    }
    return { status: res.status, headers, body: res.body };
  };
}
