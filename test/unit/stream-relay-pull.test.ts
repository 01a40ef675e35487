/**
 * `pull`, the promise-free read of a streamed answer: Node's transport queue (chunk-source.ts) and
 * the relay (stream-relay.ts) hand a chunk to their reader in the call that brought it, so a chunk
 * goes from the engine's socket to the client's response with no step of the microtask queue. The
 * relay's guarantees hold on this path too: the end reported once, a broken SSE stream closed with
 * an error event, a broken plain body failing its read, empty chunks skipped.
 */
import { describe, expect, it } from 'vitest';
import { ChunkQueue } from '../../src/adapters/undici/chunk-source.ts';
import type { ChunkReader } from '../../src/core/contracts/upstream.ts';
import { type RelayEnd, relaySource } from '../../src/core/routing/stream-relay.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();
type Read = ReadableStreamReadResult<Uint8Array>;

function queue() {
  const flow = { resumed: 0, cancelled: 0 };
  const q = new ChunkQueue({ resume: () => flow.resumed++, cancel: () => flow.cancelled++ });
  return { q, flow };
}

/** A reader that pulls again after every chunk, as Node's writer does, recording what it got. */
function keepPulling(reader: ChunkReader) {
  const got: string[] = [];
  const state = { done: false, error: undefined as unknown };
  const onResult = (r: Read) => {
    if (r.done) state.done = true;
    else {
      got.push(dec.decode(r.value));
      pull();
    }
  };
  const onError = (e: unknown) => {
    state.error = e;
  };
  const pull = () => reader.pull?.(onResult, onError);
  pull();
  return { got, state };
}

describe('ChunkQueue.pull', () => {
  it('hands over a queued chunk before it returns, and a later one inside push', () => {
    const { q } = queue();
    q.push(enc.encode('a'));
    const got: string[] = [];
    q.pull(
      (r) => got.push(r.done ? 'done' : dec.decode(r.value)),
      () => got.push('error'),
    );
    expect(got).toEqual(['a']);
    q.pull(
      (r) => got.push(r.done ? 'done' : dec.decode(r.value)),
      () => got.push('error'),
    );
    expect(got).toEqual(['a']);
    q.push(enc.encode('b'));
    expect(got).toEqual(['a', 'b']);
  });

  it('ends, fails and cancels a waiting pull at once, and refuses a second pull while one waits', () => {
    const ends: string[] = [];
    const record = (name: string) => ({
      ok: (r: Read) => ends.push(`${name}:${r.done ? 'done' : 'chunk'}`),
      err: (e: unknown) => ends.push(`${name}:${(e as Error).message}`),
    });
    const a = queue().q;
    const first = record('end');
    a.pull(first.ok, first.err);
    const second = record('second');
    a.pull(second.ok, second.err);
    a.end();
    const b = queue().q;
    const failing = record('fail');
    b.pull(failing.ok, failing.err);
    b.fail(new Error('cut'));
    const { q: c, flow } = queue();
    const cancelled = record('cancel');
    c.pull(cancelled.ok, cancelled.err);
    void c.cancel();
    expect(ends).toEqual(['second:a read is already pending', 'end:done', 'fail:cut', 'cancel:done']);
    expect(flow.cancelled).toBe(1);
  });

  it('read() still settles with what pull would have given', async () => {
    const { q } = queue();
    const reading = q.read();
    q.push(enc.encode('x'));
    const r = await reading;
    expect(r.done ? '' : dec.decode(r.value)).toBe('x');
  });
});

describe('the relay over a reader that offers pull', () => {
  it('passes each chunk on inside the push that brought it, then reports the end once', () => {
    const { q } = queue();
    const ends: RelayEnd[] = [];
    const relay = relaySource(q, { sse: true, onDone: (e) => ends.push(e) }).getReader();
    expect(relay.pull).toBeTypeOf('function');
    const out = keepPulling(relay);
    q.push(enc.encode('data: 1\n\n'));
    expect(out.got).toEqual(['data: 1\n\n']);
    q.push(new Uint8Array(0)); // an empty chunk is nobody's business
    q.push(enc.encode('data: [DONE]\n\n'));
    expect(out.got).toEqual(['data: 1\n\n', 'data: [DONE]\n\n']);
    expect(ends).toEqual([]);
    q.end();
    expect(out.state.done).toBe(true);
    expect(ends).toEqual(['end']);
  });

  it('starts from a chunk read before the answer was committed, then drains what queued meanwhile', () => {
    const { q } = queue();
    q.push(enc.encode('b'));
    q.push(enc.encode('c'));
    const first: Read = { done: false, value: enc.encode('a') };
    const out = keepPulling(relaySource({ reader: q, first }, { sse: true, onDone: () => {} }).getReader());
    expect(out.got).toEqual(['a', 'b', 'c']);
  });

  it('closes a broken SSE stream with an error event, and then ends', () => {
    const { q } = queue();
    const ends: RelayEnd[] = [];
    const out = keepPulling(relaySource(q, { sse: true, onDone: (e) => ends.push(e) }).getReader());
    q.push(enc.encode('data: {"a":'));
    q.fail(new Error('socket hang up'));
    expect(out.got[1]).toMatch(/^\n\ndata: \{"error":\{.*"type":"upstream_stream_error"/);
    expect(out.state).toEqual({ done: true, error: undefined });
    expect(ends).toEqual(['error']);
  });

  it('fails the read of a broken plain body, so the truncation is visible', () => {
    const { q } = queue();
    const ends: RelayEnd[] = [];
    const out = keepPulling(relaySource(q, { sse: false, onDone: (e) => ends.push(e) }).getReader());
    q.push(enc.encode('{"partial":'));
    const cut = new Error('cut');
    q.fail(cut);
    expect(out.got).toEqual(['{"partial":']);
    expect(out.state).toEqual({ done: false, error: cut });
    expect(ends).toEqual(['error']);
  });

  it('a client that cancels while a pull waits ends it, reports cancel once and stops the engine', async () => {
    const { q, flow } = queue();
    const ends: RelayEnd[] = [];
    const relay = relaySource(q, { sse: true, onDone: (e) => ends.push(e) }).getReader();
    const out = keepPulling(relay);
    await relay.cancel('client gone');
    q.push(enc.encode('late'));
    expect(out.got).toEqual([]);
    expect(out.state.done).toBe(true);
    expect(ends).toEqual(['cancel']);
    expect(flow.cancelled).toBe(1);
  });

  it("settles each of its reader's pulls once, even when the engine reader answers twice", () => {
    let answer: ((r: Read) => void) | undefined;
    const engine: ChunkReader = {
      read: () => Promise.reject(new Error('unused')),
      pull: (onResult) => {
        answer = onResult;
      },
      cancel: () => Promise.resolve(),
    };
    const relay = relaySource(
      { getReader: () => engine, cancel: () => Promise.resolve() },
      {
        sse: true,
        onDone: () => {},
      },
    ).getReader();
    const got: string[] = [];
    relay.pull?.(
      (r) => got.push(r.done ? 'done' : dec.decode(r.value)),
      () => got.push('error'),
    );
    answer?.({ done: false, value: enc.encode('a') });
    answer?.({ done: false, value: enc.encode('b') });
    expect(got).toEqual(['a']);
  });
});
