import { describe, expect, it } from 'vitest';
import { ChunkTail } from '../../src/core/observability/usage.ts';
import { type RelayEnd, relaySource, relayStream } from '../../src/core/routing/stream-relay.ts';
import { FakeClock } from '../support/fake-clock.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A source that yields the given chunks, then ends or fails. */
function source(chunks: string[], failWith?: Error) {
  let cancelled: unknown = 'not cancelled';
  let i = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks[i++];
      if (next !== undefined) controller.enqueue(enc.encode(next));
      else if (failWith) controller.error(failWith);
      else controller.close();
    },
    cancel(reason) {
      cancelled = reason;
    },
  });
  return { stream, cancelled: () => cancelled };
}

async function drain(stream: ReadableStream<Uint8Array>): Promise<{ chunks: string[]; error?: unknown }> {
  const chunks: string[] = [];
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { chunks };
      chunks.push(dec.decode(value));
    }
  } catch (error) {
    return { chunks, error };
  }
}

describe('relayStream', () => {
  it('passes chunks through unchanged and reports the end once', async () => {
    const ends: RelayEnd[] = [];
    const src = source(['data: {"a":1}\n\n', 'data: [DONE]\n\n']);
    const out = await drain(relayStream(src.stream, { sse: true, onDone: (e) => ends.push(e) }));
    expect(out.chunks).toEqual(['data: {"a":1}\n\n', 'data: [DONE]\n\n']);
    expect(ends).toEqual(['end']);
  });

  it('ends a broken SSE stream with an error event and no [DONE]', async () => {
    const ends: RelayEnd[] = [];
    const src = source(['data: {"a":1}\n\n'], new Error('socket hang up'));
    const out = await drain(relayStream(src.stream, { sse: true, onDone: (e) => ends.push(e) }));
    expect(out.error).toBeUndefined();
    expect(out.chunks[0]).toBe('data: {"a":1}\n\n');
    const last = out.chunks.at(-1) as string;
    expect(last).toMatch(/^data: \{"error":\{.*"type":"upstream_stream_error"/);
    expect(out.chunks.join('')).not.toContain('[DONE]');
    expect(ends).toEqual(['error']);
  });

  it('terminates a partial SSE event before the error event', async () => {
    const src = source(['data: {"a":'], new Error('cut'));
    const out = await drain(relayStream(src.stream, { sse: true, onDone: () => {} }));
    expect(out.chunks.at(-1)?.startsWith('\n\ndata: {"error"')).toBe(true);
  });

  it('errors a broken non-SSE body so the truncation is visible', async () => {
    const ends: RelayEnd[] = [];
    const src = source(['{"partial":'], new Error('cut'));
    const out = await drain(relayStream(src.stream, { sse: false, onDone: (e) => ends.push(e) }));
    expect(out.chunks).toEqual(['{"partial":']);
    expect(out.error).toBeInstanceOf(Error);
    expect(ends).toEqual(['error']);
  });

  it('cancels the source when the client cancels, reporting cancel once', async () => {
    const ends: RelayEnd[] = [];
    let cancelled: unknown;
    const src = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(enc.encode('x'));
      },
      cancel(reason) {
        cancelled = reason;
      },
    });
    const relayed = relayStream(src, { sse: true, onDone: (e) => ends.push(e) });
    const reader = relayed.getReader();
    await reader.read();
    await reader.cancel('client gone');
    expect(cancelled).toBe('client gone');
    expect(ends).toEqual(['cancel']);
  });

  it('times the first chunk and each gap after it with one clock reading per chunk, and keeps the tail', async () => {
    const clock = new FakeClock(1000);
    let reads = 0;
    const monotonic = clock.monotonic.bind(clock);
    clock.monotonic = () => {
      reads++;
      return monotonic();
    };
    const tail = new ChunkTail();
    const firsts: number[] = [];
    const gaps: number[] = [];
    const src = source([
      'data: {"t":1}\n\n',
      'data: {"t":2}\n\n',
      'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n',
      'data: [DONE]\n\n',
    ]);
    const reader = relayStream(src.stream, {
      sse: true,
      clock,
      onFirstChunk: (at) => firsts.push(at),
      onGap: (ms) => gaps.push(ms),
      tail,
      idle: { ms: 60_000, clock },
      onDone: () => {},
    }).getReader();
    reads = 0;
    await reader.read();
    clock.advance(25);
    await reader.read();
    clock.advance(40);
    await reader.read();
    await reader.read();
    expect((await reader.read()).done).toBe(true);
    expect(firsts).toEqual([1000]);
    expect(gaps).toEqual([25, 40, 0]);
    expect(reads).toBe(4); // one per chunk, shared with the idle guard
    expect(tail.usage()).toEqual({ prompt: 3, completion: 2 });
  });
});

describe('relaySource at the request deadline', () => {
  /** A request's stop hooks, as the exchange keeps them, and whether it stopped by its deadline. */
  function stoppable() {
    const hooks: ((reason: string) => void)[] = [];
    let passed = false;
    return {
      deadline: { onStop: (hook: (reason: string) => void) => void hooks.push(hook), passed: () => passed },
      stop(reason: string, byDeadline: boolean) {
        passed = byDeadline;
        for (const hook of hooks) hook(reason);
      },
    };
  }

  it('the deadline passing while nobody reads ends the relay as cancelled and cancels the engine body', async () => {
    const ends: RelayEnd[] = [];
    const src = source(['data: 1\n\n', 'data: 2\n\n']);
    const req = stoppable();
    const reader = relaySource(src.stream, {
      sse: true,
      deadline: req.deadline,
      onDone: (e) => ends.push(e),
    }).getReader();
    expect(dec.decode((await reader.read()).value)).toBe('data: 1\n\n');
    req.stop('request timeout', true);
    expect(ends).toEqual(['cancel']);
    await Promise.resolve();
    expect(src.cancelled()).toBe('request timeout');
    expect((await reader.read()).done).toBe(true);
  });

  it('a stop that is not the deadline leaves the relay to the client and the engine', async () => {
    const ends: RelayEnd[] = [];
    const src = source(['data: 1\n\n']);
    const req = stoppable();
    const out = relaySource(src.stream, { sse: true, deadline: req.deadline, onDone: (e) => ends.push(e) });
    req.stop('client disconnected', false);
    expect(ends).toEqual([]);
    const reader = out.getReader();
    expect(dec.decode((await reader.read()).value)).toBe('data: 1\n\n');
    expect((await reader.read()).done).toBe(true);
    expect(ends).toEqual(['end']);
    req.stop('request timeout', true);
    expect(ends).toEqual(['end']);
  });
});
