/**
 * The routing input of a request, read once: the parsed JSON body (when the route carries JSON),
 * `model` and `stream`. Malformed JSON is a 400 that never reaches an engine.
 */
import { RouterError } from '../contracts/errors.ts';

export interface RequestInfo {
  model?: string;
  stream: boolean;
  /** Routing text and keys, when the configured policies read them. */
  text?: string;
  routingKey?: string;
  sessionId?: string;
}

const decoder = new TextDecoder();

export function parseJsonBody(body: Uint8Array): unknown {
  if (body.byteLength === 0)
    throw new RouterError('invalid_json', 'request body is empty; expected a JSON object');
  try {
    return JSON.parse(decoder.decode(body));
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    throw new RouterError('invalid_json', `request body is not valid JSON: ${detail}`);
  }
}

/** Extracts the routing input from a parsed body (an object, or the request is invalid). */
export function requestInfoFromJson(json: unknown): RequestInfo {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new RouterError('invalid_request', 'request body must be a JSON object');
  }
  const body = json as Record<string, unknown>;
  const model = body.model;
  if (model !== undefined && model !== null && typeof model !== 'string') {
    throw new RouterError('invalid_request', '`model` must be a string', { param: 'model' });
  }
  return typeof model === 'string'
    ? { model, stream: body.stream === true }
    : { stream: body.stream === true };
}

export function isJsonContentType(contentType: string | undefined): boolean {
  return contentType?.includes('json') === true;
}
