/**
 * Passes an engine's streaming body to the client chunk by chunk (no buffering, no re-chunking,
 * no parsing) and reports exactly once how it ended. A cut upstream never becomes a clean end:
 * SSE gets a final error event and no `[DONE]`; any other body errors so the truncation is visible.
 * An answer silent for longer than its idle limit is cut the same way. The relay may start from a
 * first chunk already read (the attempt loop reads it before committing the answer). Timing costs
 * one clock reading per chunk (shared by the idle guard, the inter-chunk gaps and the stall
 * watch); the body's last chunks can be kept by reference for the usage scan at its end (usage.ts).
 */

import { webStreamOf } from '../contracts/answer.ts';
import { callbackOf } from '../contracts/callback-of.ts';
import type { Clock } from '../contracts/runtime.ts';
import type { ChunkReader, ChunkSource } from '../contracts/upstream.ts';
import type { ChunkTail } from '../observability/usage.ts';
import { IdleGuard, type StreamIdle, StreamIdleError } from './stream-idle.ts';

export { StreamIdleError } from './stream-idle.ts';

export type RelayEnd = 'end' | 'error' | 'cancel';

export interface RelayOptions {
  sse: boolean;
  /** Called once, when the body ends, fails or the client cancels it. */
  onDone(end: RelayEnd, error?: unknown): void;
  /** Read once per chunk for the timings below (the idle guard's clock when absent). */
  clock?: Clock;
  /** Called once, with the first chunk (time to first token): the clock's reading then (0 without one). */
  onFirstChunk?(at: number): void;
  /** Called with every chunk after the first: ms since the previous one (inter-token latency). */
  onGap?(ms: number): void;
  /** Keeps the body's last chunks. */
  tail?: ChunkTail;
  /** Called with every chunk (progress for the stall watch), with the clock's reading then (0 without one). */
  onChunk?(at: number): void;
  /** Message for the SSE error event when the stream fails. */
  describeError?(error: unknown): string;
  /** Type and code of that SSE error event (default `upstream_stream_error`). */
  errorType?(error: unknown): string | undefined;
  /** The stream's idle limit (stream-idle.ts). */
  idle?: StreamIdle;
  /**
   * The request's deadline. When it passes while nobody is reading, the client has stopped reading:
   * the relay ends as cancelled (some hosts, such as a local workerd, never report a client that
   * left mid-stream any other way). With a read pending, the aborted engine body fails that read.
   */
  deadline?: { onStop(hook: (reason: string) => void): void; passed(): boolean };
}

/** A source whose first read was already taken. */
export interface PrefetchedSource {
  reader: ChunkReader;
  first: ReadableStreamReadResult<Uint8Array>;
}

const encoder = new TextEncoder();

export function sseErrorEvent(
  message: string,
  needsSeparator: boolean,
  type = 'upstream_stream_error',
): Uint8Array {
  const event = JSON.stringify({ error: { message, type, code: type, param: null } });
  return encoder.encode(`${needsSeparator ? '\n\n' : ''}data: ${event}\n\n`);
}

const cancelIdle = (reader: ChunkReader) => void reader.cancel(new StreamIdleError('idle')).catch(() => {});
const stopRelay = (relay: Relay, reason: string) => relay.stopped(reason);
const ignore = () => {};

/** The relay as a Web stream (hosts that build a `Response`, tests). */
export function relayStream(
  src: ChunkSource | PrefetchedSource,
  options: RelayOptions,
): ReadableStream<Uint8Array> {
  return webStreamOf(relaySource(src, options));
}

type Read = ReadableStreamReadResult<Uint8Array>;

const DONE: Read = { done: true, value: undefined };
/** The relay's reactions to an engine read, made apart from the class (callback-of.ts says why). */
const deliverOf = (relay: Relay) => (result: Read) => relay.deliver(result);
const failedOf = (relay: Relay) => (error: unknown) => relay.failed(error);

/**
 * The relay as a chunk source: each read takes the engine's next chunk and passes it on as it is.
 * Node writes it to the client straight from here with `pull`; no Web stream sits in between.
 */
export function relaySource(src: ChunkSource | PrefetchedSource, options: RelayOptions): ChunkSource {
  return new Relay(src, options);
}

class Relay implements ChunkSource, ChunkReader {
  private readonly reader: ChunkReader;
  private pending: ReadableStreamReadResult<Uint8Array> | undefined;
  private finished = false;
  /** Nothing more to read: the end, the SSE error event sent, or cancelled. */
  private closed = false;
  /** A failed plain body: every later read fails with it too. */
  private broken: { error: unknown } | undefined;
  private first = true;
  private lastByte = 0x0a;
  private lastChunkAt = 0;
  private reading = false;
  private readonly idle: IdleGuard | undefined;
  private readonly clock: Clock | undefined;
  private readonly onEngineResult: (result: Read) => void;
  private readonly onEngineError: (error: unknown) => void;
  /** The reader of the relay's pending read. */
  private onResult: (result: Read) => void = ignore;
  private onError: (error: unknown) => void = ignore;

  constructor(
    src: ChunkSource | PrefetchedSource,
    private readonly options: RelayOptions,
  ) {
    const reader = 'reader' in src ? src.reader : src.getReader();
    this.reader = reader;
    this.pending = 'first' in src ? src.first : undefined;
    this.idle =
      options.idle && options.idle.ms > 0
        ? new IdleGuard(options.idle, callbackOf(reader, cancelIdle))
        : undefined;
    this.clock = options.clock ?? options.idle?.clock;
    this.onEngineResult = deliverOf(this);
    this.onEngineError = failedOf(this);
    // The exchange's stop hook, not its AbortSignal: an AbortController and a listener on it cost a
    // streamed request about 5 % of its CPU on Node (docs/benchmarks.md, round 6).
    options.deadline?.onStop(callbackOf(this, stopRelay));
  }

  getReader(): ChunkReader {
    return this;
  }

  read(): Promise<Read> {
    return new Promise<Read>((resolve, reject) => this.pull(resolve, reject));
  }

  /**
   * The next chunk for the client. With an engine reader that offers `pull` (Node's transport), a
   * chunk reaches `onResult` in the call that brought it from the socket: no promise, no step of
   * the microtask queue, which each chunk of each stream would otherwise pay, twice. A Web stream's
   * reader costs one reaction per chunk.
   */
  pull(onResult: (result: Read) => void, onError: (error: unknown) => void): void {
    this.onResult = onResult;
    this.onError = onError;
    this.next();
  }

  /** Settles the pending read with a result: once (the reader's callbacks are let go first). */
  private give(result: Read): void {
    const onResult = this.onResult;
    this.onResult = this.onError = ignore;
    onResult(result);
  }

  /** Settles the pending read with an error, likewise once. */
  private refuse(error: unknown): void {
    const onError = this.onError;
    this.onResult = this.onError = ignore;
    onError(error);
  }

  /** Hands the reader what comes next: a chunk kept from before, the end, or the engine's next read. */
  private next(): void {
    const pending = this.pending;
    if (this.broken) this.refuse(this.broken.error);
    else if (this.closed) this.give(DONE);
    else if (pending !== undefined) {
      this.pending = undefined;
      this.deliver(pending);
    } else this.readEngine();
  }

  private readEngine(): void {
    this.reading = true;
    const reader = this.reader;
    if (reader.pull) {
      reader.pull(this.onEngineResult, this.onEngineError);
      return;
    }
    let read: Promise<Read>;
    try {
      read = reader.read();
    } catch (error) {
      read = Promise.reject(error);
    }
    read.then(this.onEngineResult, this.onEngineError);
  }

  /** The engine's read gave a result: it goes to the client, or (an empty chunk) the next one does. */
  deliver(result: Read): void {
    this.reading = false;
    let out: Read | undefined;
    try {
      out = this.pass(result);
    } catch (error) {
      this.refuse(error); // a plain body that broke, or went silent too long
      return;
    }
    if (out === undefined) this.next();
    else this.give(out);
  }

  /** The engine's read failed. */
  failed(error: unknown): void {
    this.reading = false;
    if (this.finished) {
      this.closed = true; // cancelled by the client meanwhile
      this.give(DONE);
      return;
    }
    let out: Read;
    try {
      out = this.fail(error);
    } catch (thrown) {
      this.refuse(thrown);
      return;
    }
    this.give(out);
  }

  cancel(reason?: unknown): Promise<void> {
    this.finish('cancel', reason);
    this.closed = true;
    return this.reader.cancel(reason).catch(() => {});
  }

  /** The request stopped; if by its deadline while nobody was reading, the client stopped reading. */
  stopped(reason: string): void {
    if (this.finished || this.reading || !this.options.deadline?.passed()) return;
    this.finish('cancel', reason);
    this.closed = true;
    this.reader.cancel(reason).catch(() => {});
  }

  private finish(end: RelayEnd, error?: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.idle?.stop();
    this.options.onDone(end, error);
  }

  /** What one engine result gives the client: a chunk, the end, or nothing (an empty chunk). */
  private pass(result: Read): Read | undefined {
    if (this.finished) {
      this.closed = true;
      return DONE;
    }
    if (this.idle?.expired) return this.fail(new StreamIdleError(`no data for ${this.options.idle?.ms} ms`));
    if (result.done) {
      this.finish('end');
      this.closed = true;
      return DONE;
    }
    const chunk = result.value;
    if (chunk.byteLength === 0) return undefined;
    this.arrived(chunk);
    return result;
  }

  /** SSE gets a final error event and then ends; any other body fails, now and at every later read. */
  private fail(error: unknown): Read {
    this.finish('error', error);
    const { options } = this;
    if (!options.sse) {
      this.broken = { error };
      throw error;
    }
    this.closed = true;
    const message = options.describeError?.(error) ?? 'upstream stream ended unexpectedly';
    return { done: false, value: sseErrorEvent(message, this.lastByte !== 0x0a, options.errorType?.(error)) };
  }

  /** A chunk's bookkeeping: one clock reading for the idle guard, the first chunk and the gaps. */
  private arrived(chunk: Uint8Array): void {
    const { options } = this;
    const now = this.clock === undefined ? 0 : this.clock.monotonic();
    if (this.idle) this.idle.lastChunkAt = now;
    if (this.first) {
      this.first = false;
      options.onFirstChunk?.(now);
    } else options.onGap?.(now - this.lastChunkAt);
    this.lastChunkAt = now;
    options.onChunk?.(now);
    options.tail?.push(chunk);
    this.lastByte = chunk[chunk.byteLength - 1] as number;
  }
}
