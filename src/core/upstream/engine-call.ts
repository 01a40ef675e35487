/**
 * The router's own small calls to an engine (health probes, `/v1/models`, cache flush and info
 * fan-out): one request to a URL with the engines' bearer (--api-key) and a timeout on the injected
 * clock that covers reading the answer too. Never throws: a failure is a result.
 */
import type { Clock } from '../contracts/runtime.ts';
import type { Upstream, UpstreamResponse } from '../contracts/upstream.ts';

export interface EngineCallOptions {
  clock: Clock;
  timeoutMs: number;
  /** Bearer sent to the engine (--api-key). */
  apiKey?: string | undefined;
  method?: string;
  headers?: Record<string, string>;
  /** A small buffered body (admin fan-out calls); none by default. */
  body?: Uint8Array;
}

export type EngineCallResult<T> =
  | { ok: true; value: T }
  | { ok: false; timedOut: boolean; error: unknown; message: string };

function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return typeof err === 'string' ? err : 'request failed';
}

/**
 * Sends `method` (GET by default) to `url` and hands the response to `read` while the timeout still
 * runs; `read` gets the call's signal (aborted at the timeout) so it can stop reading a body.
 */
export async function engineCall<T>(
  upstream: Upstream,
  url: string,
  options: EngineCallOptions,
  read: (res: UpstreamResponse, signal: AbortSignal) => Promise<T>,
): Promise<EngineCallResult<T>> {
  const { clock, timeoutMs } = options;
  const controller = new AbortController();
  let timedOut = false;
  const timer = clock.setTimeout(() => {
    timedOut = true;
    controller.abort(new Error(`timed out after ${timeoutMs} ms`));
  }, timeoutMs);
  try {
    const headers: Record<string, string> = { ...options.headers };
    if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
    const res = await upstream({
      url,
      method: options.method ?? 'GET',
      headers,
      body: options.body ?? null,
      signal: controller.signal,
    });
    return { ok: true, value: await read(res, controller.signal) };
  } catch (error) {
    const message = timedOut ? `timed out after ${timeoutMs} ms` : errorMessage(error);
    return { ok: false, timedOut, error, message };
  } finally {
    clock.clearTimeout(timer);
  }
}
