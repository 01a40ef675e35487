/**
 * Active health probes (DESIGN.md §9): `GET {url}{endpoint}` with a timeout driven by the injected
 * clock; healthy iff the engine answers 2xx. Probes never throw: every failure is a result.
 */
import type { Clock } from '../contracts/runtime.ts';
import type { ChunkReader, Upstream, UpstreamResponse } from '../contracts/upstream.ts';
import { engineCall } from '../upstream/engine-call.ts';
import { fetchWorkerModels } from './discovery.ts';

export interface ProbeOptions {
  /** Path probed on each base URL, e.g. `/health`. */
  endpoint: string;
  timeoutMs: number;
  clock: Clock;
  apiKey?: string;
  /**
   * Also learn the worker's models from `/v1/models` after a successful probe (read from the
   * probe's own body when the endpoint is `/v1/models`).
   */
  models?: boolean;
}

export interface ProbeResult {
  ok: boolean;
  /** The engine's status, when it answered. */
  status?: number;
  /** Why the probe failed: `HTTP 503`, `timeout after 5000 ms`, or the transport's message. */
  error?: string;
  /** Model ids, when asked for and the worker listed some. */
  models?: string[];
}

/** The largest `/v1/models` body parsed when the probe endpoint is `/v1/models`. */
const MAX_MODELS_BODY = 4 * 1024 * 1024;
const decoder = new TextDecoder();

function isModelsEndpoint(endpoint: string): boolean {
  return endpoint.split('?')[0]?.replace(/\/+$/, '') === '/v1/models';
}

/** Reads a stream to its end, keeping up to MAX_MODELS_BODY bytes when `keep`; undefined past that. */
async function drain(reader: ChunkReader, keep: boolean): Promise<string | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!keep || size > MAX_MODELS_BODY) continue;
    size += value.byteLength;
    chunks.push(value);
  }
  if (!keep || size > MAX_MODELS_BODY) return undefined;
  let text = '';
  for (const c of chunks) text += decoder.decode(c, { stream: true });
  return text + decoder.decode();
}

/**
 * Reads a body to its end, keeping its text only when `keep` (up to MAX_MODELS_BODY). An abort
 * cancels the stream, so a body that never ends cannot outlive the probe's timeout.
 */
async function readBody(
  body: UpstreamResponse['body'],
  signal: AbortSignal,
  keep: boolean,
): Promise<string | undefined> {
  if (body === null) return keep ? '' : undefined;
  if (body instanceof Uint8Array)
    return keep && body.byteLength <= MAX_MODELS_BODY ? decoder.decode(body) : undefined;
  const reader = body.getReader();
  const cancel = () => {
    reader.cancel(signal.reason).catch(() => {});
  };
  if (signal.aborted) cancel();
  else signal.addEventListener('abort', cancel, { once: true });
  try {
    const text = await drain(reader, keep);
    if (signal.aborted) throw signal.reason ?? new Error('aborted');
    return text;
  } finally {
    signal.removeEventListener('abort', cancel);
  }
}

function parseModels(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  try {
    const data = (JSON.parse(text) as { data?: unknown }).data;
    if (!Array.isArray(data)) return undefined;
    return data.flatMap((m) =>
      typeof m === 'object' && m !== null && typeof m.id === 'string' ? [m.id as string] : [],
    );
  } catch {
    return undefined;
  }
}

/**
 * The transport's message, with its cause when the message hides it (Node's fetch says only
 * `fetch failed`; the cause says `connect ECONNREFUSED ...`), so the health log can tell why.
 */
function failureText(call: { error: unknown; message: string }): string {
  const cause = call.error instanceof Error ? call.error.cause : undefined;
  if (!(cause instanceof Error)) return call.message;
  const code = (cause as { code?: unknown }).code;
  const detail = cause.message || (typeof code === 'string' ? code : '');
  return detail === '' || call.message.includes(detail) ? call.message : `${call.message}: ${detail}`;
}

/** Probes one base URL. Never rejects. */
export async function probeWorker(upstream: Upstream, url: string, opts: ProbeOptions): Promise<ProbeResult> {
  const base = url.replace(/\/+$/, '');
  const { clock, timeoutMs } = opts;
  const started = clock.monotonic();
  const modelsInBody = opts.models === true && isModelsEndpoint(opts.endpoint);
  const call = await engineCall(
    upstream,
    `${base}${opts.endpoint}`,
    { clock, timeoutMs, apiKey: opts.apiKey, headers: { accept: 'application/json' } },
    async (res, signal): Promise<ProbeResult> => {
      const ok = res.status >= 200 && res.status < 300;
      const text = await readBody(res.body, signal, ok && modelsInBody);
      if (!ok) return { ok, status: res.status, error: `HTTP ${res.status}` };
      const models = modelsInBody ? parseModels(text) : undefined;
      return models && models.length > 0 ? { ok, status: res.status, models } : { ok, status: res.status };
    },
  );
  if (!call.ok)
    return { ok: false, error: call.timedOut ? `timeout after ${timeoutMs} ms` : failureText(call) };
  const result = call.value;
  if (result.ok && opts.models === true && !modelsInBody) {
    const remaining = Math.max(1, timeoutMs - (clock.monotonic() - started));
    const models = await fetchWorkerModels(upstream, base, {
      clock,
      timeoutMs: remaining,
      apiKey: opts.apiKey,
    });
    if (models && models.length > 0) result.models = models;
  }
  return result;
}

/**
 * Probes every distinct base URL once (data-parallel ranks share one), concurrently.
 * Returns base URL → result; duplicates in `baseUrls` map to the same result.
 */
export async function probeAll(
  upstream: Upstream,
  baseUrls: readonly string[],
  opts: ProbeOptions,
): Promise<Map<string, ProbeResult>> {
  const distinct = [...new Set(baseUrls)];
  const results = await Promise.all(distinct.map((url) => probeWorker(upstream, url, opts)));
  return new Map(distinct.map((url, i) => [url, results[i]!]));
}
