/**
 * An engine's streamed answer on Node and Deno as the core reads it (`ChunkSource`), fed straight
 * by the transport's dispatch handler (engine-call.ts): each `read()` resolves with the next chunk
 * the socket delivered, and `pull` hands it over in the same call, so on Node a chunk goes from the
 * socket to the client's response with no promise in between.
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
  /** The pending read's callbacks (`pull`'s, or the resolvers of `read`'s promise). */
  private onResult: ((read: Read) => void) | undefined;
  private onError: ((error: unknown) => void) | undefined;

  constructor(private readonly flow: ChunkFlow) {}

  /** A chunk from the socket; false when the transport should stop reading until resumed. */
  push(chunk: Uint8Array): boolean {
    if (this.ended) return true;
    const waiting = this.onResult;
    if (waiting) {
      this.settled();
      waiting({ done: false, value: chunk });
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
    const waiting = this.onResult;
    this.settled();
    waiting?.(DONE);
  }

  fail(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = { error };
    const waiting = this.onError;
    this.settled();
    waiting?.(error);
  }

  getReader(): ChunkReader {
    return this;
  }

  read(): Promise<Read> {
    return new Promise<Read>((resolve, reject) => this.pull(resolve, reject));
  }

  pull(onResult: (read: Read) => void, onError: (error: unknown) => void): void {
    const chunk = this.queue.shift();
    if (chunk !== undefined) {
      if (this.paused && this.queue.length < HIGH_WATER / 2) {
        this.paused = false;
        this.flow.resume();
      }
      onResult({ done: false, value: chunk });
    } else if (this.failure) onError(this.failure.error);
    else if (this.ended) onResult(DONE);
    else if (this.onResult) onError(new TypeError('a read is already pending'));
    else {
      this.onResult = onResult;
      this.onError = onError;
    }
  }

  cancel(): Promise<void> {
    this.queue.length = 0;
    if (!this.ended) {
      this.ended = true;
      this.flow.cancel();
    }
    const waiting = this.onResult;
    this.settled();
    waiting?.(DONE);
    return Promise.resolve();
  }

  private settled(): void {
    this.onResult = undefined;
    this.onError = undefined;
  }
}
