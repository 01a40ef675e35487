// Response helpers shared by the simulated engine's routes.
import type { Context } from 'hono';
import { errorBody, type JsonObject } from './openai-format.ts';

/** Marks errors that must reach the caller of `fetch` as a rejection (a transport failure). */
const transportErrors = new WeakSet<object>();

export function transportError<E extends Error>(err: E): E {
  transportErrors.add(err);
  return err;
}

export function isTransportError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && transportErrors.has(err);
}

export function abortError(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return reason;
  return new DOMException('This operation was aborted', 'AbortError');
}

export function connectionResetError(): TypeError {
  const cause = Object.assign(new Error('sim: connection reset by peer'), { code: 'ECONNRESET' });
  return new TypeError('fetch failed', { cause });
}

export function waitForAbort(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

export type HeaderRecord = Record<string, string>;

export function jsonResponse(status: number, body: JsonObject | string, headers: HeaderRecord): Response {
  return new Response(typeof body === 'string' ? body : JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

export function errorResponse(id: string, status: number, message: string, type?: string): Response {
  return jsonResponse(status, errorBody(status, message, type), { 'x-sim-engine': id });
}

/** Reads the body as JSON: undefined when empty, null when malformed. */
export async function readJson(c: Context): Promise<{ raw: string; json: unknown }> {
  const raw = await c.req.text();
  if (raw.length === 0) return { raw, json: undefined };
  try {
    return { raw, json: JSON.parse(raw) as unknown };
  } catch {
    return { raw, json: null };
  }
}

export function headerRecord(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}
