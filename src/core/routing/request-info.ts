/**
 * The routing input of a request, read once: the parsed JSON body (when the route carries JSON),
 * `model` and `stream`. Malformed JSON, and JSON nested deeper than MAX_JSON_DEPTH, are a 400 that
 * never reaches an engine. V8's JSON.parse is iterative (a 1M-deep array parses), but walking such
 * a value recursively overflows the stack, and engines (Python's json) fail on it with a 500 that
 * would count against them; the depth is checked once here, iteratively, before anything walks it.
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

/** Arrays and objects may nest this deep in a request body (the body object itself is level 1). */
export const MAX_JSON_DEPTH = 128;

/**
 * True when `value` nests arrays or objects deeper than `max` levels. Recursive, but never deeper
 * than `max` + 1 calls: the walk stops at the first value past the limit.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  return typeof value === 'object' && value !== null && deeper(value, 1, max);
}

function deeper(v: object, depth: number, max: number): boolean {
  if (depth > max) return true;
  if (Array.isArray(v)) {
    for (const item of v)
      if (typeof item === 'object' && item !== null && deeper(item, depth + 1, max)) return true;
    return false;
  }
  const o = v as Record<string, unknown>;
  for (const key in o) {
    const item = o[key];
    if (typeof item === 'object' && item !== null && deeper(item, depth + 1, max)) return true;
  }
  return false;
}

/** Extracts the routing input from a parsed body (an object, or the request is invalid). */
export function requestInfoFromJson(json: unknown): RequestInfo {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new RouterError('invalid_request', 'request body must be a JSON object');
  }
  if (nestsDeeperThan(json, MAX_JSON_DEPTH)) {
    throw new RouterError(
      'invalid_request',
      `request body nests arrays or objects more than ${MAX_JSON_DEPTH} levels deep`,
    );
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
