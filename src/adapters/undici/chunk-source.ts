/**
 * An engine's streamed answer on Node and Deno as the core reads it (`ChunkSource`), fed straight
 * by the transport's dispatch handler (engine-call.ts): each `read()` resolves with the next chunk
 * the socket delivered, so the relay to the client is the only Web stream a chunk passes through.
 * Chunks that arrive while nobody reads wait in a short queue; at HIGH_WATER the transport is told
 * to stop reading the socket (`push` returns false) and is resumed once the reader has drained half.
 * `cancel` aborts the engine request, which closes its connection: the engine stops generating.
 */
import type { ChunkReader, ChunkSource } from '../../core/contracts/upstream.ts';

export const HIGH_WATER = 16;

type Read = ReadableStreamReadResult<Uint8Array>;
const DONE: Read = { done: true, value: undefined };

/** What the queue tells the transport: read the socket again, or give the request up. */
export interface ChunkFlow {
  resume(): void;
  cancel(): void;
}

export class ChunkQueue implements ChunkSource, ChunkReader {
  private readonly queue: Uint8Array[] = [];
  private ended = false;
  private paused = false;
  private failure: { error: unknown } | undefined;
  private waiting: { resolve(read: Read): void; reject(error: unknown): void } | undefined;

  constructor(private readonly flow: ChunkFlow) {}

  /** A chunk from the socket; false when the transport should stop reading until resumed. */
  push(chunk: Uint8Array): boolean {
    if (this.ended) return true;
    const w = this.waiting;
    if (w) {
      this.waiting = undefined;
      w.resolve({ done: false, value: chunk });
      return true;
    }
    this.queue.push(chunk);
    if (this.queue.length < HIGH_WATER) return true;
    this.paused = true;
    return false;
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.settleWaiting((w) => w.resolve(DONE));
  }

  fail(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = { error };
    this.settleWaiting((w) => w.reject(error));
  }

  getReader(): ChunkReader {
    return this;
  }

  read(): Promise<Read> {
    const chunk = this.queue.shift();
    if (chunk !== undefined) {
      if (this.paused && this.queue.length < HIGH_WATER / 2) {
        this.paused = false;
        this.flow.resume();
      }
      return Promise.resolve({ done: false, value: chunk });
    }
    if (this.failure) return Promise.reject(this.failure.error);
    if (this.ended) return Promise.resolve(DONE);
    if (this.waiting) return Promise.reject(new TypeError('a read is already pending'));
    return new Promise<Read>((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  cancel(): Promise<void> {
    this.queue.length = 0;
    if (!this.ended) {
      this.ended = true;
      this.flow.cancel();
    }
    this.settleWaiting((w) => w.resolve(DONE));
    return Promise.resolve();
  }

  private settleWaiting(settle: (w: NonNullable<ChunkQueue['waiting']>) => void): void {
    const w = this.waiting;
    this.waiting = undefined;
    if (w) settle(w);
  }
}
