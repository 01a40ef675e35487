/**
 * What the policies read from a request (DESIGN §6), computed once and only for what the
 * configured policies need:
 * - text: the routing text, as the request's strings in order (never joined: routing-text.ts).
 *   Completions: `prompt` (arrays joined); chat: every message's text
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
 * field K (a dotted path reaches nested fields), comes first for both keys. A key longer than
 * `maxKeyBytes` (--sll-max-session-id-bytes) in UTF-8 is ignored: the request gets no affinity (no
 * routing key, no session id), as sticky_least_loaded does with such an id.
 * The text is capped at MAX_ROUTING_TEXT_CHARS without copying what lies past it, and a prompt
 * batch nested deeper than MAX_PROMPT_DEPTH is a 400 (the walk is bounded, never a stack overflow).
 */
import { RouterError } from '../contracts/errors.ts';
import type { RoutingText } from '../contracts/routing-text.ts';
import type { PolicyNeeds } from '../policies/policy.ts';
import { utf8Length } from '../policies/session-table.ts';
import { CappedText } from './capped-text.ts';
import { parseJsonBody } from './request-info.ts';

export interface RoutingInput {
  text?: RoutingText;
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
function contentText(content: unknown, out: CappedText): void {
  if (typeof content === 'string') out.add(content);
  else if (Array.isArray(content)) {
    for (const p of content) {
      if (typeof p === 'string') out.add(p);
      else if (isObject(p) && typeof p.text === 'string') out.add(p.text);
    }
  } else if (isObject(content) && typeof content.text === 'string') out.add(content.text);
}

function toolCallsText(calls: unknown, out: CappedText): void {
  if (!Array.isArray(calls)) return;
  for (const c of calls) {
    const fn = isObject(c) && isObject(c.function) ? c.function : undefined;
    if (!fn) continue;
    const name = typeof fn.name === 'string' ? fn.name : '';
    const args = typeof fn.arguments === 'string' ? fn.arguments : '';
    out.add(` ${name}(`, args, ')');
  }
}

function chatText(messages: unknown, out: CappedText): void {
  if (!Array.isArray(messages)) return;
  for (const m of messages) {
    if (out.room <= 0) return;
    if (!isObject(m)) continue;
    out.add(`${typeof m.role === 'string' ? m.role : ''}: `);
    contentText(m.content, out);
    toolCallsText(m.tool_calls, out);
    out.add('\n');
  }
}

/**
 * Batches nest at most this deep in a prompt (vLLM takes a string, token ids, or a batch of
 * either: two levels); deeper is a 400, whatever checked the body before.
 */
export const MAX_PROMPT_DEPTH = 8;

/** A prompt: a string, token ids, or a batch of either (joined by newlines). */
function promptText(prompt: unknown, field: string, out: CappedText, depth = 1): void {
  if (typeof prompt === 'string') {
    out.add(prompt);
    return;
  }
  if (!Array.isArray(prompt)) return;
  if (depth > MAX_PROMPT_DEPTH) {
    const message = `\`${field}\` nests arrays more than ${MAX_PROMPT_DEPTH} levels deep`;
    throw new RouterError('invalid_request', message, { param: field });
  }
  if (prompt.every((p) => typeof p === 'number')) {
    // An id and its separator take two characters at least: never join more ids than fit.
    const fit = Math.ceil(out.room / 2) + 1;
    out.add((prompt.length > fit ? prompt.slice(0, fit) : prompt).join(' '));
    return;
  }
  for (let i = 0; i < prompt.length && out.room > 0; i++) {
    if (i > 0) out.add('\n');
    promptText(prompt[i], field, out, depth + 1);
  }
}

/** One Responses API input item: a string, a message with content parts, or a tool call or output. */
function responseItem(item: unknown, out: CappedText): void {
  if (typeof item === 'string') out.add(item, '\n');
  else if (!isObject(item)) return;
  else if ('content' in item) {
    out.add(typeof item.role === 'string' ? `${item.role}: ` : '');
    contentText(item.content, out);
    out.add('\n');
  } else if (typeof item.output === 'string') out.add('tool: ', item.output, '\n');
  else if (typeof item.arguments === 'string') out.add(String(item.name ?? ''), '(', item.arguments, ')\n');
  else if (typeof item.text === 'string') out.add(item.text, '\n');
}

/** Responses API: `instructions`, then `input`: a string, or items. */
function responsesText(body: Json, out: CappedText): void {
  if (typeof body.instructions === 'string') out.add(body.instructions, '\n');
  const input = body.input;
  if (typeof input === 'string') out.add(input);
  if (!Array.isArray(input)) return;
  for (let i = 0; i < input.length && out.room > 0; i++) responseItem(input[i], out);
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

function generateText(body: Json, out: CappedText): void {
  if (typeof body.text === 'string' || Array.isArray(body.text)) promptText(body.text, 'text', out);
  else if (body.prompt !== undefined) promptText(body.prompt, 'prompt', out);
  else promptText(body.input_ids, 'input_ids', out);
}

/** Other routes: the first of messages / prompt / input / text found. */
function otherText(body: Json, out: CappedText): void {
  if (Array.isArray(body.messages)) chatText(body.messages, out);
  else if (body.prompt !== undefined) promptText(body.prompt, 'prompt', out);
  else if (body.input !== undefined) responsesText(body, out);
  else promptText(body.text, 'text', out);
}

function collectText(body: Json, route: string, out: CappedText): void {
  const kind = routeKind(route);
  if (kind === 'chat') chatText(body.messages, out);
  else if (kind === 'completions') promptText(body.prompt, 'prompt', out);
  else if (kind === 'generate') generateText(body, out);
  else if (kind === 'responses') responsesText(body, out);
  else otherText(body, out);
}

/** The routing text of a request body as one string, at most MAX_ROUTING_TEXT_CHARS characters. */
export function routingText(body: Json, route: string): string {
  const out = new CappedText();
  collectText(body, route, out);
  return out.text();
}

/**
 * The routing text of a buffered JSON body, read again: a retry's decision (the text is not kept
 * between decisions, attempt-run.ts `releaseText`). The body parsed when it arrived, so it parses.
 */
export function bodyRoutingText(body: Uint8Array, route: string): RoutingText | undefined {
  const out = new CappedText();
  collectText(parseJsonBody(body) as Json, route, out);
  return out.empty ? undefined : out.value();
}

/** A key within the size limit; a longer one is no key at all. */
function capped(key: string | undefined, maxBytes: number): string | undefined {
  if (key === undefined) return undefined;
  // UTF-8 takes at most 3 bytes per UTF-16 unit: only keys that might be too long are measured.
  if (key.length * 3 <= maxBytes) return key;
  return key.length > maxBytes || utf8Length(key) > maxBytes ? undefined : key;
}

export function extractRoutingInput(
  body: Record<string, unknown>,
  route: string,
  header: HeaderLookup,
  needs: PolicyNeeds,
  sessionKey?: string,
  maxKeyBytes = Number.POSITIVE_INFINITY,
): RoutingInput {
  const out: RoutingInput = {};
  if (needs.text) {
    const text = new CappedText();
    collectText(body, route, text);
    if (!text.empty) out.text = text.value();
  }
  if (needs.routingKey) {
    const key = capped(firstKey(body, header, ROUTING_KEY_HEADERS, sessionKey), maxKeyBytes);
    if (key !== undefined) out.routingKey = key;
  }
  if (needs.sessionId) {
    const id = capped(firstKey(body, header, SESSION_HEADERS, sessionKey), maxKeyBytes);
    if (id !== undefined) out.sessionId = id;
  }
  return out;
}
