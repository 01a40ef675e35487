/**
 * What the policies read from a request (DESIGN §6), computed once and only for what the
 * configured policies need:
 * - text: the routing text. Completions: `prompt` (arrays joined); chat: every message's text
 *   (system, user, assistant with its tool calls, tool; the text parts of multimodal content) as
 *   `role: text` lines; generate: `text`, `prompt` or `input_ids`; responses: `instructions`
 *   then the input texts. Other routes: the first of messages / prompt / input / text found.
 *   A turn's text is a prefix of the next turn's, which is what the prefix tree matches on.
 * - routingKey (hashing policies): the first non-empty of the headers x-session-id, x-user-id,
 *   x-tenant-id, x-correlation-id, x-request-id, x-trace-id, then the body's
 *   session_params.session_id, user, session_id, user_id.
 * - sessionId (session policies): the same without the per-request headers (x-request-id,
 *   x-trace-id), which would make every request a new session.
 * With `sessionKey` (--session-key K, production-stack session routing) header K, then body
 * field K (a dotted path reaches nested fields), comes first for both keys.
 */
import { RouterError } from '../contracts/errors.ts';
import type { PolicyNeeds } from '../policies/policy.ts';

export interface RoutingInput {
  text?: string;
  routingKey?: string;
  sessionId?: string;
}

export type HeaderLookup = (name: string) => string | undefined;

export const SESSION_HEADERS = ['x-session-id', 'x-user-id', 'x-tenant-id', 'x-correlation-id'] as const;
export const ROUTING_KEY_HEADERS = [...SESSION_HEADERS, 'x-request-id', 'x-trace-id'] as const;
export const SESSION_BODY_FIELDS = ['session_params.session_id', 'user', 'session_id', 'user_id'] as const;

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A non-empty string (numbers count: `"user_id": 42`), else undefined. */
function keyValue(v: unknown): string | undefined {
  if (typeof v === 'string') return v.trim() === '' ? undefined : v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

function bodyField(body: Json, path: string): string | undefined {
  const direct = keyValue(body[path]);
  if (direct !== undefined || !path.includes('.')) return direct;
  let v: unknown = body;
  for (const part of path.split('.')) {
    if (!isObject(v)) return undefined;
    v = v[part];
  }
  return keyValue(v);
}

function firstKey(
  body: Json,
  header: HeaderLookup,
  headers: readonly string[],
  sessionKey: string | undefined,
): string | undefined {
  if (sessionKey) {
    const v = keyValue(header(sessionKey.toLowerCase())) ?? bodyField(body, sessionKey);
    if (v !== undefined) return v;
  }
  for (const name of headers) {
    const v = keyValue(header(name));
    if (v !== undefined) return v;
  }
  for (const field of SESSION_BODY_FIELDS) {
    const v = bodyField(body, field);
    if (v !== undefined) return v;
  }
  return undefined;
}

/** Text parts of message content: a string, or an array of parts ({text}, {type:'text',text}, strings). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const parts: string[] = [];
    for (const p of content) {
      if (typeof p === 'string') parts.push(p);
      else if (isObject(p) && typeof p.text === 'string') parts.push(p.text);
    }
    return parts.join('');
  }
  if (isObject(content) && typeof content.text === 'string') return content.text;
  return '';
}

function toolCallsText(calls: unknown): string {
  if (!Array.isArray(calls)) return '';
  const parts: string[] = [];
  for (const c of calls) {
    const fn = isObject(c) && isObject(c.function) ? c.function : undefined;
    if (!fn) continue;
    const name = typeof fn.name === 'string' ? fn.name : '';
    const args = typeof fn.arguments === 'string' ? fn.arguments : '';
    parts.push(` ${name}(${args})`);
  }
  return parts.join('');
}

function chatText(messages: unknown): string {
  if (!Array.isArray(messages)) return '';
  // Parts joined once: a flat string (repeated `+=` builds a rope, slower to scan).
  const parts: string[] = [];
  for (const m of messages) {
    if (!isObject(m)) continue;
    const role = typeof m.role === 'string' ? m.role : '';
    parts.push(`${role}: `, contentText(m.content), toolCallsText(m.tool_calls), '\n');
  }
  return parts.join('');
}

/**
 * Batches nest at most this deep in a prompt (vLLM takes a string, token ids, or a batch of
 * either: two levels); deeper is a 400, whatever checked the body before.
 */
export const MAX_PROMPT_DEPTH = 8;

/** A prompt: a string, token ids, or a batch of either (joined by newlines). */
function promptText(prompt: unknown, field: string, depth = 1): string {
  if (typeof prompt === 'string') return prompt;
  if (!Array.isArray(prompt)) return '';
  if (depth > MAX_PROMPT_DEPTH) {
    throw new RouterError(
      'invalid_request',
      `\`${field}\` nests arrays more than ${MAX_PROMPT_DEPTH} levels deep`,
      {
        param: field,
      },
    );
  }
  if (prompt.every((p) => typeof p === 'number')) return prompt.join(' ');
  return prompt.map((p) => promptText(p, field, depth + 1)).join('\n');
}

/** Responses API `input`: a string, or items (messages with content parts, tool outputs). */
function responsesText(body: Json): string {
  const instructions = typeof body.instructions === 'string' ? `${body.instructions}\n` : '';
  const input = body.input;
  if (typeof input === 'string') return instructions + input;
  if (!Array.isArray(input)) return instructions;
  const out: string[] = [instructions];
  for (const item of input) {
    if (typeof item === 'string') out.push(item, '\n');
    else if (!isObject(item)) continue;
    else if ('content' in item) {
      out.push(typeof item.role === 'string' ? `${item.role}: ` : '', contentText(item.content), '\n');
    } else if (typeof item.output === 'string') out.push('tool: ', item.output, '\n');
    else if (typeof item.arguments === 'string')
      out.push(String(item.name ?? ''), '(', item.arguments, ')\n');
    else if (typeof item.text === 'string') out.push(item.text, '\n');
  }
  return out.join('');
}

export type RouteKind = 'chat' | 'completions' | 'generate' | 'responses' | 'other';

/** The kind of an inference route (`/v1/chat/completions`, `/v1/completions`, `/generate`, ...). */
export function routeKind(route: string): RouteKind {
  if (route.endsWith('/chat/completions')) return 'chat';
  if (route.endsWith('/completions')) return 'completions';
  if (route.endsWith('/generate')) return 'generate';
  if (route.endsWith('/responses')) return 'responses';
  return 'other';
}

export function routingText(body: Json, route: string): string {
  switch (routeKind(route)) {
    case 'chat':
      return chatText(body.messages);
    case 'completions':
      return promptText(body.prompt, 'prompt');
    case 'generate':
      if (typeof body.text === 'string' || Array.isArray(body.text)) return promptText(body.text, 'text');
      if (body.prompt !== undefined) return promptText(body.prompt, 'prompt');
      return promptText(body.input_ids, 'input_ids');
    case 'responses':
      return responsesText(body);
    default:
      if (Array.isArray(body.messages)) return chatText(body.messages);
      if (body.prompt !== undefined) return promptText(body.prompt, 'prompt');
      if (body.input !== undefined) return responsesText(body);
      return promptText(body.text, 'text');
  }
}

export function extractRoutingInput(
  body: Record<string, unknown>,
  route: string,
  header: HeaderLookup,
  needs: PolicyNeeds,
  sessionKey?: string,
): RoutingInput {
  const out: RoutingInput = {};
  if (needs.text) {
    const text = routingText(body, route);
    if (text !== '') out.text = text;
  }
  if (needs.routingKey) {
    const key = firstKey(body, header, ROUTING_KEY_HEADERS, sessionKey);
    if (key !== undefined) out.routingKey = key;
  }
  if (needs.sessionId) {
    const id = firstKey(body, header, SESSION_HEADERS, sessionKey);
    if (id !== undefined) out.sessionId = id;
  }
  return out;
}
