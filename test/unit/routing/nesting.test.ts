import { describe, expect, it } from 'vitest';
import { RouterError } from '../../../src/core/contracts/errors.ts';
import {
  MAX_JSON_DEPTH,
  nestsDeeperThan,
  parseJsonBody,
  requestInfoFromJson,
} from '../../../src/core/routing/request-info.ts';
import { MAX_PROMPT_DEPTH, routingText } from '../../../src/core/routing/routing-input.ts';

/** An array nested `depth` levels deep around `inner`, built without recursion. */
function deepArray(depth: number, inner: unknown = 1): unknown {
  let v: unknown = inner;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

describe('nesting depth of request bodies', () => {
  it('V8 parses a 100k-deep array without overflowing (JSON.parse is iterative)', () => {
    const text = `{"prompt":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expect(() => parseJsonBody(new TextEncoder().encode(text))).not.toThrow();
  });

  it('measures depth without recursion, objects and arrays alike', () => {
    expect(nestsDeeperThan({}, 1)).toBe(false);
    expect(nestsDeeperThan({ a: [] }, 1)).toBe(true);
    expect(nestsDeeperThan({ a: [{ b: 'x' }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
    expect(nestsDeeperThan('text', 0)).toBe(false);
    expect(nestsDeeperThan({ prompt: deepArray(1_000_000) }, MAX_JSON_DEPTH)).toBe(true);
  });

  it('rejects a body nested deeper than MAX_JSON_DEPTH with invalid_request, accepts it at the limit', () => {
    const ok = { prompt: deepArray(MAX_JSON_DEPTH - 1) };
    expect(requestInfoFromJson(ok)).toEqual({ stream: false });
    const err = thrown(() => requestInfoFromJson({ prompt: deepArray(MAX_JSON_DEPTH) }));
    expect(err).toBeInstanceOf(RouterError);
    expect((err as RouterError).code).toBe('invalid_request');
    expect((err as RouterError).status).toBe(400);
  });

  it('bounds the prompt walk itself: a 100k-deep prompt is a 400, never a stack overflow', () => {
    const err = thrown(() => routingText({ prompt: deepArray(100_000) }, '/v1/completions'));
    expect(err).toBeInstanceOf(RouterError);
    expect((err as RouterError).code).toBe('invalid_request');
    expect((err as RouterError).param).toBe('prompt');
    const generate = thrown(() => routingText({ input_ids: deepArray(100_000) }, '/generate'));
    expect((generate as RouterError).param).toBe('input_ids');
    // Within the bound, batches of batches still read.
    expect(routingText({ prompt: deepArray(MAX_PROMPT_DEPTH - 1, 'x') }, '/v1/completions')).toBe('x');
  });
});
