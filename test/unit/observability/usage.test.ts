/** Token counts from the end of an answer: the last `usage` object, found without parsing the body. */
import { describe, expect, it } from 'vitest';
import { ChunkTail, USAGE_WINDOW, usageIn } from '../../../src/core/observability/usage.ts';

const enc = new TextEncoder();
const bytes = (text: string) => enc.encode(text);

/** A vLLM chat completion, `usage` followed by the fields vLLM writes after it. */
const completion = (content: string, usage: object | null) =>
  JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    model: 'llama',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage,
    prompt_logprobs: null,
    kv_transfer_params: null,
  });

describe('usageIn', () => {
  it('reads prompt and completion tokens of a non-streaming answer (nested details ignored)', () => {
    const body = completion('Hello', {
      prompt_tokens: 12,
      total_tokens: 15,
      completion_tokens: 3,
      prompt_tokens_details: { cached_tokens: 8 },
    });
    expect(usageIn(bytes(body))).toEqual({ prompt: 12, completion: 3 });
  });

  it('is not fooled by "usage" or token keys inside generated text', () => {
    const body = completion('I saw "usage": {"prompt_tokens": 999} in the docs', {
      prompt_tokens: 4,
      completion_tokens: 9,
    });
    expect(usageIn(bytes(body))).toEqual({ prompt: 4, completion: 9 });
    expect(usageIn(bytes(completion('"usage": {"prompt_tokens": 999}', null)))).toBeUndefined();
  });

  it('reads the Responses API names and an embeddings answer (prompt only)', () => {
    const responses =
      '{"status":"completed","usage":{"input_tokens":7,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"total_tokens":12}}';
    expect(usageIn(bytes(responses))).toEqual({ prompt: 7, completion: 5 });
    const embeddings =
      '{"object":"list","data":[{"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":6,"total_tokens":6}}';
    expect(usageIn(bytes(embeddings))).toEqual({ prompt: 6 });
  });

  it('finds nothing without usage, with `"usage": null`, or beyond the window from the end', () => {
    expect(usageIn(bytes('{"id":"x","choices":[]}'))).toBeUndefined();
    expect(usageIn(bytes('{"usage": null}'))).toBeUndefined();
    expect(usageIn(bytes(''))).toBeUndefined();
    const far = `{"usage":{"prompt_tokens":1,"completion_tokens":2},"prompt_logprobs":"${'x'.repeat(USAGE_WINDOW)}"}`;
    expect(usageIn(bytes(far))).toBeUndefined();
  });

  it('a usage key starting exactly USAGE_WINDOW bytes from the end is found, one byte further is not', () => {
    const tail = (pad: number) => {
      const head = '{"usage":{"prompt_tokens":3,"completion_tokens":4},"x":"';
      const rest = `${'g'.repeat(pad)}"}`; // g: the byte the scan jumps between
      return bytes(head + rest);
    };
    const head = '{"usage":{"prompt_tokens":3,"completion_tokens":4},"x":"'.length;
    const inside = USAGE_WINDOW - head - 2 + 1; // the key's quote at exactly length - USAGE_WINDOW
    expect(tail(inside).length - USAGE_WINDOW).toBe(1);
    expect(usageIn(tail(inside))).toEqual({ prompt: 3, completion: 4 });
    expect(usageIn(tail(inside + 1))).toBeUndefined();
  });

  it('takes the last usage of a stream (continuous usage stats: the cumulative total)', () => {
    const sse = [1, 2, 3]
      .map(
        (n) =>
          `data: {"choices":[{"delta":{"content":"t"}}],"usage":{"prompt_tokens":5,"completion_tokens":${n}}}\n\n`,
      )
      .join('');
    expect(usageIn(bytes(`${sse}data: [DONE]\n\n`))).toEqual({ prompt: 5, completion: 3 });
  });
});

describe('ChunkTail', () => {
  const USAGE_EVENT =
    'data: {"id":"c","choices":[],"usage":{"prompt_tokens":21,"completion_tokens":8,"total_tokens":29}}\n\n';

  it('keeps the last chunks by reference and reads the final usage event before [DONE]', () => {
    const tail = new ChunkTail();
    for (let i = 0; i < 50; i++) tail.push(bytes(`data: {"choices":[{"delta":{"content":"w${i}"}}]}\n\n`));
    tail.push(bytes(USAGE_EVENT));
    tail.push(bytes('data: [DONE]\n\n'));
    expect(tail.usage()).toEqual({ prompt: 21, completion: 8 });
  });

  it('joins a usage event split across chunks', () => {
    const tail = new ChunkTail();
    const whole = `${USAGE_EVENT}data: [DONE]\n\n`;
    for (let i = 0; i < whole.length; i += 40) tail.push(bytes(whole.slice(i, i + 40)));
    expect(tail.usage()).toEqual({ prompt: 21, completion: 8 });
  });

  it('reports nothing for a stream without include_usage, or with no chunk at all', () => {
    const tail = new ChunkTail();
    expect(tail.usage()).toBeUndefined();
    tail.push(bytes('data: {"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}\n\n'));
    tail.push(bytes('data: [DONE]\n\n'));
    expect(tail.usage()).toBeUndefined();
  });

  it('hands back the last chunk itself when it holds the whole window (no copy)', () => {
    const tail = new ChunkTail();
    const big = bytes(`${'x'.repeat(USAGE_WINDOW)}${USAGE_EVENT}`);
    tail.push(bytes('earlier'));
    tail.push(big);
    expect(tail.bytes()).toBe(big);
  });
});
