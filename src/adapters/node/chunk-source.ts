/**
 * An engine's streamed answer on Node as the core reads it (`ChunkSource`), taken straight from
 * undici's body stream: each `read()` resolves with the next chunk the socket delivered, so the
 * relay to the client is the only Web stream a chunk passes through (a `ReadableStream` here would
 * be a second queue and a second promise per chunk). Chunks that arrive while nobody reads wait in
 * a short queue; past HIGH_WATER the socket is paused until the reader catches up. `cancel`
 * destroys the body, which closes the engine's connection: the engine stops generating.
 */
import type { Readable } from 'node:stream';
import type { ChunkReader, ChunkSource } from '../../core/contracts/upstream.ts';

const HIGH_WATER = 16;

type Read = ReadableStreamReadResult<Uint8Array>;
const DONE: Read = { done: true, value: undefined };

export function chunkSource(body: Readable): ChunkSource {
  const queue: Uint8Array[] = [];
  let ended = false;
  let failure: { error: unknown } | undefined;
  let waiting: { resolve(read: Read): void; reject(error: unknown): void } | undefined;

  const settleWaiting = (settle: (w: NonNullable<typeof waiting>) => void) => {
    const w = waiting;
    waiting = undefined;
    if (w) settle(w);
  };
  body.on('data', (chunk: Buffer) => {
    if (ended) return;
    if (waiting) return settleWaiting((w) => w.resolve({ done: false, value: chunk }));
    queue.push(chunk);
    if (queue.length >= HIGH_WATER) body.pause();
  });
  body.on('end', () => {
    if (ended) return;
    ended = true;
    settleWaiting((w) => w.resolve(DONE));
  });
  body.on('error', (error) => {
    if (ended) return;
    ended = true;
    failure = { error };
    settleWaiting((w) => w.reject(error));
  });

  const reader: ChunkReader = {
    read() {
      const chunk = queue.shift();
      if (chunk !== undefined) {
        if (body.isPaused() && queue.length < HIGH_WATER / 2) body.resume();
        return Promise.resolve({ done: false, value: chunk });
      }
      if (failure) return Promise.reject(failure.error);
      if (ended) return Promise.resolve(DONE);
      if (waiting) return Promise.reject(new TypeError('a read is already pending'));
      return new Promise<Read>((resolve, reject) => {
        waiting = { resolve, reject };
      });
    },
    cancel() {
      queue.length = 0;
      if (!ended) {
        ended = true;
        body.destroy();
      }
      settleWaiting((w) => w.resolve(DONE));
      return Promise.resolve();
    },
  };
  return { getReader: () => reader, cancel: () => reader.cancel() };
}
