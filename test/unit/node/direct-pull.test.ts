/**
 * Node's writer of a streamed answer (src/adapters/node/direct.ts) reads a relay over its transport
 * with `pull`: each chunk the engine's socket delivers is written to the client's response in the
 * same call, with no promise in between, and backpressure still holds (a full response waits for
 * `drain` before the next chunk is taken).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { writeAnswer } from '../../../src/adapters/node/direct.ts';
import { ChunkQueue } from '../../../src/adapters/undici/chunk-source.ts';
import { relaySource } from '../../../src/core/routing/stream-relay.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The parts of a ServerResponse the writer uses, recording what it was given. */
function fakeResponse(accepts: () => boolean) {
  const writes: string[] = [];
  const listeners = new Map<string, () => void>();
  const res = {
    destroyed: false,
    ended: false,
    writeHead: () => res,
    flushHeaders: () => {},
    write: (chunk: Uint8Array) => {
      writes.push(dec.decode(chunk));
      return accepts();
    },
    end: () => {
      res.ended = true;
    },
    once: (event: string, fn: () => void) => listeners.set(event, fn),
    off: (event: string) => listeners.delete(event),
    destroy: () => {
      res.destroyed = true;
    },
  };
  const emit = (event: string) => {
    const fn = listeners.get(event);
    listeners.delete(event);
    fn?.();
  };
  return { res, writes, emit };
}

function streamed(accepts: () => boolean) {
  const engine = { cancelled: 0 };
  const queue = new ChunkQueue({ resume: () => {}, cancel: () => engine.cancelled++ });
  const ends: string[] = [];
  const body = relaySource(queue, { sse: true, onDone: (end) => ends.push(end) });
  const fake = fakeResponse(accepts);
  const req = { complete: true } as IncomingMessage;
  writeAnswer(req, fake.res as unknown as ServerResponse, { status: 200, headers: {}, body });
  return { queue, ends, engine, ...fake };
}

describe('Node writes a relayed stream in the call that brought each chunk', () => {
  it('writes each chunk inside the push from the socket and ends inside the end', () => {
    const { queue, writes, res, ends } = streamed(() => true);
    queue.push(enc.encode('data: 1\n\n'));
    expect(writes).toEqual(['data: 1\n\n']);
    queue.push(enc.encode('data: 2\n\n'));
    expect(writes).toEqual(['data: 1\n\n', 'data: 2\n\n']);
    queue.end();
    expect(res.ended).toBe(true);
    expect(ends).toEqual(['end']);
  });

  it('takes no chunk while the response is full, and the queued ones at drain', () => {
    let room = false;
    const { queue, writes, emit, res } = streamed(() => room);
    queue.push(enc.encode('a'));
    queue.push(enc.encode('b'));
    queue.push(enc.encode('c'));
    expect(writes).toEqual(['a']);
    room = true;
    emit('drain');
    expect(writes).toEqual(['a', 'b', 'c']);
    queue.end();
    expect(res.ended).toBe(true);
  });

  it('cancels the engine body when the client leaves', () => {
    const { queue, emit, ends, engine, writes } = streamed(() => true);
    queue.push(enc.encode('a'));
    emit('close');
    expect(ends).toEqual(['cancel']);
    expect(engine.cancelled).toBe(1);
    queue.push(enc.encode('late'));
    expect(writes).toEqual(['a']);
  });
});
