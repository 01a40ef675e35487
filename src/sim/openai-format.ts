// Wire formats of vLLM's OpenAI-compatible server (and SGLang's /generate), as plain data builders.

export type JsonObject = Record<string, unknown>;

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

const WORDS = [
  ' Once',
  ' upon',
  ' a',
  ' time',
  ' the',
  ' router',
  ' sent',
  ' every',
  ' token',
  ' to',
  ' its',
  ' engine',
  ' and',
  ' nothing',
  ' was',
  ' lost.',
];

/** The i-th generated token (deterministic). */
export function tokenText(i: number): string {
  return WORDS[i % WORDS.length]!;
}

export function generatedText(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += tokenText(i);
  return s;
}

/** vLLM/OpenAI error envelope. */
export function errorBody(status: number, message: string, type = errorType(status)): JsonObject {
  return { error: { message, type, param: null, code: status } };
}

export function errorType(status: number): string {
  if (status === 400) return 'BadRequestError';
  if (status === 401) return 'AuthenticationError';
  if (status === 404) return 'NotFoundError';
  if (status === 408) return 'TimeoutError';
  if (status === 429) return 'RateLimitError';
  if (status === 503) return 'ServiceUnavailableError';
  if (status >= 500) return 'InternalServerError';
  return 'BadRequestError';
}

/** The text the engine "prefills": chat turns as `role:content\n`, prompts as given. */
export function promptText(
  body: JsonObject,
  route: 'chat' | 'completions' | 'generate' | 'responses',
): string {
  if (route === 'chat') {
    const messages = Array.isArray(body.messages) ? body.messages : [];
    let s = '';
    for (const m of messages) {
      const msg = (m ?? {}) as JsonObject;
      s += `${typeof msg.role === 'string' ? msg.role : ''}:${contentText(msg.content)}\n`;
    }
    return s;
  }
  if (route === 'generate') return anyText(body.text ?? body.prompt ?? body.input_ids);
  if (route === 'responses')
    return anyText(body.input) + (typeof body.instructions === 'string' ? body.instructions : '');
  return anyText(body.prompt);
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let s = '';
  for (const part of content) {
    const p = (part ?? {}) as JsonObject;
    if (typeof p.text === 'string') s += p.text;
  }
  return s;
}

function anyText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    return value
      .map((v) => {
        if (typeof v === 'string') return v;
        const o = (v ?? {}) as JsonObject;
        if ('content' in o) return contentText(o.content);
        return JSON.stringify(v);
      })
      .join('');
  }
  return value === undefined || value === null ? '' : JSON.stringify(value);
}

export function promptTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

export interface CompletionShape {
  id: string;
  created: number;
  model: string;
  chat: boolean;
}

export function completionJson(
  s: CompletionShape,
  text: string,
  finish: string,
  usage: Usage,
  kvTransferParams: JsonObject | null,
): JsonObject {
  const choice = s.chat
    ? {
        index: 0,
        message: { role: 'assistant', content: text, refusal: null, tool_calls: [], reasoning_content: null },
        logprobs: null,
        finish_reason: finish,
        stop_reason: null,
      }
    : { index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null, prompt_logprobs: null };
  return {
    id: s.id,
    object: s.chat ? 'chat.completion' : 'text_completion',
    created: s.created,
    model: s.model,
    choices: [choice],
    service_tier: null,
    system_fingerprint: null,
    usage,
    prompt_logprobs: null,
    kv_transfer_params: kvTransferParams,
  };
}

/** SSE events of a streamed completion: one per token, then the terminal part. */
export function sseTokenEvents(s: CompletionShape, n: number, finish: string): string[] {
  const head = `data: {"id":"${s.id}","object":"${s.chat ? 'chat.completion.chunk' : 'text_completion'}","created":${s.created},"model":${JSON.stringify(s.model)},"choices":[{"index":0,`;
  const events: string[] = [];
  for (let i = 0; i < n; i++) {
    const fin = i === n - 1 ? `"${finish}"` : 'null';
    const tok = JSON.stringify(tokenText(i));
    let ev = s.chat
      ? `${head}"delta":{"content":${tok}},"logprobs":null,"finish_reason":${fin}${i === n - 1 ? ',"stop_reason":null' : ''}}]}\n\n`
      : `${head}"text":${tok},"logprobs":null,"finish_reason":${fin},"stop_reason":null}]}\n\n`;
    // vLLM's first chat chunk carries the role with empty content.
    if (i === 0 && s.chat)
      ev = `${head}"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n${ev}`;
    events.push(ev);
  }
  if (n === 0) {
    const role = s.chat
      ? `${head}"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n`
      : '';
    const last = s.chat
      ? `${head}"delta":{},"logprobs":null,"finish_reason":"${finish}","stop_reason":null}]}\n\n`
      : `${head}"text":"","logprobs":null,"finish_reason":"${finish}","stop_reason":null}]}\n\n`;
    events.push(role + last);
  }
  return events;
}

export function sseTerminal(s: CompletionShape, usage: Usage | null): string {
  const usageEvent = usage
    ? `data: {"id":"${s.id}","object":"${s.chat ? 'chat.completion.chunk' : 'text_completion'}","created":${s.created},"model":${JSON.stringify(s.model)},"choices":[],"usage":${JSON.stringify(usage)}}\n\n`
    : '';
  return `${usageEvent}data: [DONE]\n\n`;
}

/** SGLang /generate: one JSON object, or SSE events carrying the cumulative text. */
export function generateJson(
  id: string,
  text: string,
  n: number,
  finish: string,
  usage: Usage,
  done = true,
): JsonObject {
  return {
    text,
    meta_info: {
      id,
      finish_reason: done
        ? finish === 'length'
          ? { type: 'length', length: n }
          : { type: 'stop', matched: null }
        : null,
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: n,
      cached_tokens: usage.prompt_tokens_details.cached_tokens,
    },
  };
}

export function generateEvents(id: string, n: number, finish: string, usage: Usage): string[] {
  const events: string[] = [];
  let text = '';
  for (let i = 0; i < n; i++) {
    text += tokenText(i);
    events.push(`data: ${JSON.stringify(generateJson(id, text, i + 1, finish, usage, i === n - 1))}\n\n`);
  }
  if (n === 0) events.push(`data: ${JSON.stringify(generateJson(id, '', 0, finish, usage))}\n\n`);
  return events;
}

/** Minimal OpenAI Responses API object. */
export function responsesJson(
  id: string,
  created: number,
  model: string,
  text: string,
  usage: Usage,
): JsonObject {
  return {
    id,
    object: 'response',
    created_at: created,
    status: 'completed',
    model,
    output: [
      {
        type: 'message',
        id: `msg_${id.slice(5)}`,
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text, annotations: [] }],
      },
    ],
    usage: {
      input_tokens: usage.prompt_tokens,
      input_tokens_details: { cached_tokens: usage.prompt_tokens_details.cached_tokens },
      output_tokens: usage.completion_tokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.total_tokens,
    },
  };
}

export function modelsJson(models: readonly string[], created: number, maxModelLen: number): JsonObject {
  return {
    object: 'list',
    data: models.map((id) => ({
      id,
      object: 'model',
      created,
      owned_by: 'vllm',
      root: id,
      parent: null,
      max_model_len: maxModelLen,
      permission: [
        {
          id: `modelperm-${id}`,
          object: 'model_permission',
          created,
          allow_create_engine: false,
          allow_sampling: true,
          allow_logprobs: true,
          allow_search_indices: false,
          allow_view: true,
          allow_fine_tuning: false,
          organization: '*',
          group: null,
          is_blocking: false,
        },
      ],
    })),
  };
}
