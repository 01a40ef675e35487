/**
 * An in-memory network for the core: a fetch-shaped function that dispatches each request by URL
 * host to a named in-process engine (a simulated vLLM engine's `fetch`), with real `Request` and
 * `Response` objects end to end, and records every call. It behaves like a socket-backed fetch
 * where the core can tell: a host with no engine (or one taken down) refuses the connection, which
 * the transport reports the only way a transport can, by throwing; an abort rejects a pending call
 * with the signal's reason and errors a body that is still being read.
 */
import type { Upstream } from '../../src/core/contracts/upstream.ts';
import { fetchUpstream } from '../../src/core/upstream/fetch-upstream.ts';

/** Anything that answers a Web `Request` (a `SimEngine`, a Hono app). */
export interface InMemoryEngine {
  fetch(req: Request): Promise<Response>;
}

export type CallOutcome = 'pending' | 'response' | 'refused' | 'failed' | 'aborted';

export interface UpstreamCall {
  seq: number;
  /** `a.test`, or `a.test:8000` when the URL names a port. */
  host: string;
  method: string;
  /** Path and query. */
  path: string;
  /** Request headers, names lowercased. */
  headers: Record<string, string>;
  /** The request body as text when it was sent buffered; null when none or streamed. */
  body: string | null;
  /** `response` once the engine answered; `refused` (no engine), `failed` (the engine's transport error), `aborted`. */
  outcome: CallOutcome;
  /** The engine's status, once it answered. */
  status: number | null;
}

export interface InMemoryUpstream {
  /** The fetch-shaped transport. */
  readonly fetch: typeof fetch;
  /** The same, as the core's upstream contract (through `fetchUpstream`). */
  readonly upstream: Upstream;
  /** Every call, oldest first. */
  readonly calls: readonly UpstreamCall[];
  /** Takes a host down: from now on its connections are refused (calls in flight are left alone). */
  refuse(host: string): void;
  /** Brings a refused host back. */
  restore(host: string): void;
  /** Forgets the recorded calls. */
  clearCalls(): void;
}

const decoder = new TextDecoder();

/** What a refused TCP connection looks like from undici's fetch. */
export function connectionRefused(url: URL): TypeError {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const cause = Object.assign(new Error(`connect ECONNREFUSED ${url.hostname}:${port}`), {
    code: 'ECONNREFUSED',
  });
  return new TypeError('fetch failed', { cause });
}

function bufferedText(body: RequestInit['body'] | undefined): string | null {
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return decoder.decode(body);
  if (body instanceof ArrayBuffer) return decoder.decode(new Uint8Array(body));
  return null;
}

function headerRecord(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/** Waits for the engine's answer, or rejects with the abort reason first (cancelling a late body). */
function raceAbort(answer: Promise<Response>, signal: AbortSignal): Promise<Response> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    let settled = false;
    const onAbort = () => {
      settled = true;
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    answer.then(
      (res) => {
        signal.removeEventListener('abort', onAbort);
        if (settled) res.body?.cancel(signal.reason).catch(() => {});
        else resolve(res);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        if (!settled) reject(err);
      },
    );
  });
}

/**
 * The engine's body as fetch hands it over: chunk for chunk (no read-ahead), erroring with the
 * abort reason (and cancelling the engine's stream) if the request is aborted while it is read.
 */
function abortableBody(src: ReadableStream<Uint8Array>, signal: AbortSignal): ReadableStream<Uint8Array> {
  const reader = src.getReader();
  let open = true;
  let onAbort = () => {};
  const stop = () => {
    open = false;
    signal.removeEventListener('abort', onAbort);
  };
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        onAbort = () => {
          if (!open) return;
          stop();
          controller.error(signal.reason);
          reader.cancel(signal.reason).catch(() => {});
        };
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      },
      async pull(controller) {
        let result: ReadableStreamReadResult<Uint8Array>;
        try {
          result = await reader.read();
        } catch (err) {
          if (open) {
            stop();
            controller.error(err);
          }
          return;
        }
        if (!open) return;
        if (result.done) {
          stop();
          controller.close();
        } else {
          controller.enqueue(result.value);
        }
      },
      cancel(reason) {
        stop();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/** A network of in-memory engines, keyed by host (`{ 'a.test': engineA, 'b.test': engineB }`). */
export function inMemoryUpstream(engines: Record<string, InMemoryEngine>): InMemoryUpstream {
  const byHost = new Map(Object.entries(engines));
  const down = new Set<string>();
  const calls: UpstreamCall[] = [];
  let seq = 0;

  const fetchImpl = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const call: UpstreamCall = {
      seq: ++seq,
      host: url.host,
      method: request.method,
      path: url.pathname + url.search,
      headers: headerRecord(request.headers),
      body: bufferedText(init?.body),
      outcome: 'pending',
      status: null,
    };
    calls.push(call);
    const engine = down.has(url.host) ? undefined : byHost.get(url.host);
    if (!engine) {
      call.outcome = 'refused';
      throw connectionRefused(url);
    }
    let res: Response;
    try {
      res = await raceAbort(engine.fetch(request), request.signal);
    } catch (err) {
      call.outcome = request.signal.aborted ? 'aborted' : 'failed';
      throw err;
    }
    call.outcome = 'response';
    call.status = res.status;
    if (res.body === null) return res;
    return new Response(abortableBody(res.body, request.signal), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  };

  return {
    fetch: fetchImpl as typeof fetch,
    upstream: fetchUpstream(fetchImpl as typeof fetch),
    calls,
    refuse: (host) => {
      down.add(host);
    },
    restore: (host) => {
      down.delete(host);
    },
    clearCalls: () => {
      calls.length = 0;
    },
  };
}
