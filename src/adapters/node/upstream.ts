/**
 * The Node upstream transport: undici `request` on a keep-alive Agent, behind the core's
 * fetch-shaped `Upstream`. Small non-streaming bodies with a content-length are read whole (cheaper
 * than a stream); everything else is read chunk by chunk from undici's body (chunk-source.ts), whose
 * cancel destroys the socket stream, so a client that leaves cancels the engine's work.
 */
import { Agent, type Dispatcher } from 'undici';
import {
  StaleConnectionError,
  type Upstream,
  UpstreamBodyError,
  type UpstreamRequest,
  type UpstreamResponse,
} from '../../core/contracts/upstream.ts';
import { chunkSource } from './chunk-source.ts';

export interface UndiciUpstreamOptions {
  /** Max connections per engine origin (default unlimited). */
  connections?: number;
  keepAliveTimeoutMs?: number;
  /** Bodies up to this size with a content-length (and not SSE) are buffered. */
  bufferLimitBytes?: number;
}

export interface UndiciUpstream extends Upstream {
  close(): Promise<void>;
}

function splitUrl(url: string): { origin: string; path: string } {
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  return slash < 0 ? { origin: url, path: '/' } : { origin: url.slice(0, slash), path: url.slice(slash) };
}

type UndiciBody = Dispatcher.ResponseData['body'];

function readWhole(body: UndiciBody, length: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const out = Buffer.allocUnsafe(length);
    let offset = 0;
    body.on('data', (chunk: Buffer) => {
      if (offset + chunk.length > length) {
        body.destroy(new Error('upstream body longer than its content-length'));
        return;
      }
      chunk.copy(out, offset);
      offset += chunk.length;
    });
    body.on('end', () => {
      if (offset === length) resolve(out);
      else reject(new Error(`upstream body ended after ${offset} of ${length} bytes`));
    });
    body.on('error', reject);
  });
}

const CONNECTION_LOST = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/**
 * A failure that looks like a pooled keep-alive connection the engine had already closed (the
 * connection dropped before any response byte, and, when undici says, it had carried earlier
 * responses) becomes the core's StaleConnectionError: the pipeline resends it once, at once.
 */
function tagStaleConnection(err: unknown): unknown {
  if (typeof err !== 'object' || err === null) return err;
  const { code, socket } = err as { code?: unknown; socket?: { bytesRead?: number } };
  if (typeof code !== 'string' || !CONNECTION_LOST.has(code)) return err;
  if (socket && typeof socket.bytesRead === 'number' && socket.bytesRead === 0) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new StaleConnectionError(message, { cause: err, code });
}

export function createUndiciUpstream(options: UndiciUpstreamOptions = {}): UndiciUpstream {
  const agent = new Agent({
    keepAliveTimeout: options.keepAliveTimeoutMs ?? 30_000,
    pipelining: 1,
    headersTimeout: 0,
    bodyTimeout: 0,
    ...(options.connections === undefined ? {} : { connections: options.connections }),
  });
  const bufferLimit = options.bufferLimitBytes ?? 1 << 20;

  const upstream = async (req: UpstreamRequest): Promise<UpstreamResponse> => {
    const { origin, path } = splitUrl(req.url);
    let res: Dispatcher.ResponseData;
    try {
      res = await agent.request({
        origin,
        path,
        method: req.method as Dispatcher.HttpMethod,
        headers: req.headers,
        body: req.body === null ? null : req.body instanceof Uint8Array ? req.body : (req.body as never),
        signal: req.signal,
      });
    } catch (err) {
      throw tagStaleConnection(err);
    }
    const headers = res.headers as Record<string, string | string[]>;
    const length = headers['content-length'];
    const type = headers['content-type'];
    const streaming = typeof type === 'string' && type.includes('text/event-stream');
    if (typeof length === 'string' && !streaming) {
      const n = Number(length);
      if (n === 0) {
        res.body.resume();
        return { status: res.statusCode, headers, body: new Uint8Array(0) };
      }
      if (n > 0 && n <= bufferLimit) {
        const status = res.statusCode;
        const body = await readWhole(res.body, n).catch((err: unknown) => {
          const detail = err instanceof Error ? err.message : String(err);
          throw new UpstreamBodyError(`the body broke after status ${status}: ${detail}`, status, {
            cause: err,
          });
        });
        return { status, headers, body };
      }
    }
    return { status: res.statusCode, headers, body: chunkSource(res.body) };
  };
  return Object.assign(upstream, { close: () => agent.close() });
}
