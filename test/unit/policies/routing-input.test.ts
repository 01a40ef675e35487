import { describe, expect, it } from 'vitest';
import { extractRoutingInput, routingText } from '../../../src/core/routing/routing-input.ts';

const ALL = { text: true, routingKey: true, sessionId: true };
const NONE = { text: false, routingKey: false, sessionId: false };
const headers =
  (h: Record<string, string> = {}) =>
  (name: string): string | undefined =>
    h[name];

describe('routing text', () => {
  it('completions: the prompt, batches joined, token ids kept as a prefix-preserving string', () => {
    expect(routingText({ prompt: 'Once upon a time' }, '/v1/completions')).toBe('Once upon a time');
    expect(routingText({ prompt: ['first', 'second'] }, '/v1/completions')).toBe('first\nsecond');
    const ids = routingText({ prompt: [1, 2, 3] }, '/v1/completions');
    expect(ids).toBe('1 2 3');
    expect(routingText({ prompt: [1, 2, 3, 4] }, '/v1/completions').startsWith(ids)).toBe(true);
    expect(routingText({ prompt: [[1, 2], [3]] }, '/v1/completions')).toBe('1 2\n3');
    expect(routingText({}, '/v1/completions')).toBe('');
  });

  it('chat: every turn (system, user, assistant with tool calls, tool) and text parts of multimodal content', () => {
    const body = {
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in ' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            { type: 'text', text: 'this picture?' },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'look', arguments: '{"x":1}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'a cat' },
        { role: 'assistant', content: 'A cat.' },
      ],
    };
    const text = routingText(body, '/v1/chat/completions');
    expect(text).toBe(
      'system: Be brief.\nuser: What is in this picture?\nassistant:  look({"x":1})\ntool: a cat\nassistant: A cat.\n',
    );
    expect(text).not.toContain('base64');
  });

  it("chat: each turn's text is a prefix of the next turn's", () => {
    const turn1 = [
      { role: 'system', content: 'S' },
      { role: 'user', content: 'U1' },
    ];
    const turn2 = [...turn1, { role: 'assistant', content: 'A1' }, { role: 'user', content: 'U2' }];
    const t1 = routingText({ messages: turn1 }, '/v1/chat/completions');
    const t2 = routingText({ messages: turn2 }, '/v1/chat/completions');
    expect(t2.startsWith(t1)).toBe(true);
    expect(t2.length).toBeGreaterThan(t1.length);
  });

  it('generate: text, else prompt, else input_ids', () => {
    expect(routingText({ text: 'hello' }, '/generate')).toBe('hello');
    expect(routingText({ text: ['a', 'b'] }, '/generate')).toBe('a\nb');
    expect(routingText({ prompt: 'p' }, '/generate')).toBe('p');
    expect(routingText({ input_ids: [5, 6] }, '/generate')).toBe('5 6');
  });

  it('responses: instructions, then the input texts', () => {
    expect(routingText({ input: 'Tell me a joke' }, '/v1/responses')).toBe('Tell me a joke');
    const body = {
      instructions: 'Be funny.',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Joke?' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Knock knock.' }] },
        { type: 'function_call', name: 'door', arguments: '{}' },
        { type: 'function_call_output', call_id: 'x', output: 'who is there' },
        { role: 'user', content: 'Go on' },
      ],
    };
    expect(routingText(body, '/v1/responses')).toBe(
      'Be funny.\nuser: Joke?\nassistant: Knock knock.\ndoor({})\ntool: who is there\nuser: Go on\n',
    );
  });

  it('other routes: whichever of messages, prompt, input, text is present', () => {
    expect(routingText({ input: 'embed me' }, '/v1/embeddings')).toBe('embed me');
    expect(routingText({ messages: [{ role: 'user', content: 'x' }] }, '/tokenize')).toBe('user: x\n');
    expect(routingText({ prompt: 'p' }, '/tokenize')).toBe('p');
  });
});

describe('routing and session keys', () => {
  it('routing key: headers in priority order, then body fields', () => {
    const key = (h: Record<string, string>, body: Record<string, unknown> = {}) =>
      extractRoutingInput(body, '/v1/chat/completions', headers(h), { ...NONE, routingKey: true }).routingKey;
    const all = {
      'x-session-id': 'sess',
      'x-user-id': 'user',
      'x-tenant-id': 'tenant',
      'x-correlation-id': 'corr',
      'x-request-id': 'req',
      'x-trace-id': 'trace',
    };
    expect(key(all)).toBe('sess');
    const order = [
      'x-session-id',
      'x-user-id',
      'x-tenant-id',
      'x-correlation-id',
      'x-request-id',
      'x-trace-id',
    ];
    const h: Record<string, string> = { ...all };
    for (const name of order) {
      expect(key(h)).toBe(h[name]);
      delete h[name];
    }
    const body = { session_params: { session_id: 'bs' }, user: 'bu', session_id: 'bsid', user_id: 'buid' };
    expect(key({}, body)).toBe('bs');
    expect(key({}, { ...body, session_params: {} })).toBe('bu');
    expect(key({}, { session_id: 'bsid', user_id: 'buid' })).toBe('bsid');
    expect(key({}, { user_id: 42 })).toBe('42');
    expect(key({ 'x-trace-id': 't' }, body)).toBe('t');
    expect(key({ 'x-session-id': '  ' }, {})).toBeUndefined();
    expect(key({})).toBeUndefined();
  });

  it('session id: the stable headers only (never the per-request x-request-id / x-trace-id)', () => {
    const sid = (h: Record<string, string>, body: Record<string, unknown> = {}) =>
      extractRoutingInput(body, '/v1/completions', headers(h), { ...NONE, sessionId: true }).sessionId;
    expect(sid({ 'x-request-id': 'r', 'x-trace-id': 't' })).toBeUndefined();
    expect(sid({ 'x-request-id': 'r', 'x-correlation-id': 'c' })).toBe('c');
    expect(sid({ 'x-tenant-id': 't', 'x-user-id': 'u' })).toBe('u');
    expect(sid({ 'x-request-id': 'r' }, { user: 'alice' })).toBe('alice');
  });

  it('--session-key: that header, then that body field, comes first', () => {
    const get = (h: Record<string, string>, body: Record<string, unknown>) =>
      extractRoutingInput(body, '/v1/chat/completions', headers(h), ALL, 'X-Conversation-Id');
    expect(get({ 'x-conversation-id': 'conv', 'x-session-id': 's' }, {})).toMatchObject({
      routingKey: 'conv',
      sessionId: 'conv',
    });
    expect(get({ 'x-session-id': 's' }, { 'X-Conversation-Id': 'from-body' })).toMatchObject({
      routingKey: 'from-body',
      sessionId: 'from-body',
    });
    expect(get({ 'x-session-id': 's' }, {})).toMatchObject({ routingKey: 's', sessionId: 's' });
    const dotted = extractRoutingInput(
      { meta: { conv: 'c9' } },
      '/v1/completions',
      headers(),
      ALL,
      'meta.conv',
    );
    expect(dotted.sessionId).toBe('c9');
  });

  it('computes only what the policies need', () => {
    const body = { prompt: 'text', user: 'u' };
    const h = headers({ 'x-session-id': 's' });
    let reads = 0;
    const counting = (name: string) => {
      reads++;
      return h(name);
    };
    expect(extractRoutingInput(body, '/v1/completions', counting, NONE)).toEqual({});
    expect(reads).toBe(0);
    expect(extractRoutingInput(body, '/v1/completions', h, { ...NONE, text: true })).toEqual({
      text: 'text',
    });
    expect(extractRoutingInput(body, '/v1/completions', h, ALL)).toEqual({
      text: 'text',
      routingKey: 's',
      sessionId: 's',
    });
    expect(extractRoutingInput({}, '/v1/completions', headers(), ALL)).toEqual({});
  });
});
