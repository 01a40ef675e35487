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

/** True when `value` nests arrays or objects deeper than `max` levels (an explicit stack, no recursion). */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: { v: object; depth: number }[] = [];
  if (typeof value === 'object' && value !== null) stack.push({ v: value, depth: 1 });
  while (stack.length > 0) {
    const { v, depth } = stack.pop() as { v: object; depth: number };
    if (depth > max) return true;
    const items = Array.isArray(v) ? v : Object.values(v);
    for (const item of items) {
      if (typeof item === 'object' && item !== null) stack.push({ v: item, depth: depth + 1 });
    }
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
