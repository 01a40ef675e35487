import { describe, expect, it } from 'vitest';
import { decodeBody, prefillBody } from '../../../src/core/routing/pd-bodies.ts';
import { kvParamsOf } from '../../../src/core/routing/pd-legs.ts';

const decode = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
const KV = { do_remote_decode: true, do_remote_prefill: false };

describe('prefill body', () => {
  it('chat: one token, not streamed, n 1, minimums dropped, the connector params added', () => {
    const original = {
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 200,
      max_completion_tokens: 300,
      stream: true,
      stream_options: { include_usage: true },
      n: 3,
      min_tokens: 5,
      min_completion_tokens: 6,
      temperature: 0.2,
    };
    const body = decode(prefillBody(original, '/v1/chat/completions', KV));
    expect(body).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 1,
      max_completion_tokens: 1,
      stream: false,
      n: 1,
      temperature: 0.2,
      kv_transfer_params: KV,
    });
    expect(original.max_tokens).toBe(200); // the client's body is not touched
  });

  it('sets max_completion_tokens only when the request had it, and n only when it had it', () => {
    const body = decode(prefillBody({ model: 'm', prompt: 'x' }, '/v1/completions', KV));
    expect(body).toEqual({ model: 'm', prompt: 'x', max_tokens: 1, stream: false, kv_transfer_params: KV });
  });

  it('Responses API: max_output_tokens 1', () => {
    const body = decode(prefillBody({ model: 'm', input: 'x', max_output_tokens: 90 }, '/v1/responses', KV));
    expect(body).toMatchObject({ max_output_tokens: 1, stream: false });
    expect(body).not.toHaveProperty('max_tokens');
  });

  it('/generate: the limit in sampling_params', () => {
    const body = decode(
      prefillBody(
        { text: 'x', sampling_params: { max_new_tokens: 50, min_new_tokens: 2, temperature: 0 } },
        '/generate',
      ),
    );
    expect(body).toEqual({
      text: 'x',
      sampling_params: { max_new_tokens: 1, temperature: 0 },
      stream: false,
    });
  });

  it('P2P-NCCL (no params): a client kv_transfer_params never reaches the prefill', () => {
    const body = decode(prefillBody({ prompt: 'x', kv_transfer_params: { evil: 1 } }, '/v1/completions'));
    expect(body).not.toHaveProperty('kv_transfer_params');
  });
});

describe('decode body', () => {
  it('is the original request plus the params (the original untouched)', () => {
    const original = { model: 'm', prompt: 'x', max_tokens: 9, stream: true };
    const kv = { remote_engine_id: 'e', remote_block_ids: [1, 2] };
    expect(decode(decodeBody(original, kv))).toEqual({ ...original, kv_transfer_params: kv });
    expect(decode(decodeBody(original))).toEqual(original);
    expect(original).not.toHaveProperty('kv_transfer_params');
  });
});

describe('kv_transfer_params of a prefill answer', () => {
  const bytes = (v: unknown) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));
  it('takes the top-level object verbatim; none for null, other shapes or non-JSON', () => {
    const kv = { do_remote_prefill: true, remote_engine_id: 'p-dp0', remote_block_ids: [0, 1] };
    expect(kvParamsOf(bytes({ id: 'x', choices: [], kv_transfer_params: kv }))).toEqual(kv);
    expect(kvParamsOf(bytes({ id: 'x', kv_transfer_params: null }))).toBeUndefined();
    expect(kvParamsOf(bytes({ id: 'x', kv_transfer_params: [1] }))).toBeUndefined();
    expect(kvParamsOf(bytes('not json'))).toBeUndefined();
  });
});
