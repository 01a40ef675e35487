/**
 * The upstream transport of Node and Deno: undici's dispatch API on a keep-alive Agent
 * (engine-call.ts), behind the core's fetch-shaped `Upstream`. Small non-streaming bodies with a content-length are read
 * whole (cheaper than a stream); everything else is handed over chunk by chunk (chunk-source.ts),
 * whose cancel aborts the request and closes the connection, so a client that leaves cancels the
 * engine's work.
 */
import { Agent, type Dispatcher } from 'undici';
import {
  StaleConnectionError,
  type Upstream,
  type UpstreamRequest,
  type UpstreamResponse,
} from '../../core/contracts/upstream.ts';
import { EngineCall } from './engine-call.ts';

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

  const upstream = (req: UpstreamRequest): Promise<UpstreamResponse> => {
    const { origin, path } = splitUrl(req.url);
    return new Promise<UpstreamResponse>((resolve, reject) => {
      const stale = (err: unknown) => reject(tagStaleConnection(err));
      const call = new EngineCall(
        resolve,
        stale,
        req.signal,
        bufferLimit,
        req.method === 'HEAD',
        req.bodyWatch,
      );
      agent.dispatch(
        {
          origin,
          path,
          method: req.method as Dispatcher.HttpMethod,
          headers: req.headers,
          body: req.body === null ? null : req.body instanceof Uint8Array ? req.body : (req.body as never),
        },
        call,
      );
    });
  };
  return Object.assign(upstream, { close: () => agent.close() });
}
