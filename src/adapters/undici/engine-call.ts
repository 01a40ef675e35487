/**
 * One request to an engine on undici's dispatch API: a handler that sees the status line, headers
 * and body chunks as undici parses them, without the promise, async resource and body stream that
 * undici's `request()` builds for each call. A small answer that announced its length (and is not
 * an event stream) is collected into one buffer; any other answer is handed over at its headers
 * with a `ChunkQueue` the body's chunks are pushed into (chunk-source.ts), with backpressure.
 *
 * Errors keep the transport's contract: a failure before the headers rejects with undici's error
 * (upstream.ts tags a stale keep-alive connection), a buffered body that breaks rejects with an
 * `UpstreamBodyError`, a streamed one fails the reader. The request's signal aborts it at any point.
 */
import { type Dispatcher, util } from 'undici';
import { callbackOf } from '../../core/contracts/callback-of.ts';
import {
  type BodyWatch,
  type CallSignal,
  UpstreamBodyError,
  type UpstreamResponse,
} from '../../core/contracts/upstream.ts';
import { type ChunkFlow, ChunkQueue } from './chunk-source.ts';

type Headers = Record<string, string | string[]>;

function abortReason(signal: CallSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
}

const cancelled = () => new DOMException('the reader cancelled the answer', 'AbortError');

const abortCall = (call: EngineCall) => call.abortNow();
const watchBody = (call: EngineCall) => call.watchUnfinishedBody();

/**
 * The dispatch handler of one engine request, and the flow its streamed body's queue drives. Its
 * callbacks on itself are made with `callbackOf` (core/contracts/callback-of.ts says why).
 */
export class EngineCall implements Dispatcher.DispatchHandler, ChunkFlow {
  private abort: ((err?: Error) => void) | undefined;
  private resumeSocket: (() => void) | undefined;
  private status = 0;
  private headers: Headers = {};
  /** The whole body, when it is buffered: its announced length, and how much arrived. */
  private buffer: Buffer | undefined;
  private received = 0;
  private queue: ChunkQueue | undefined;
  private answered = false;
  /** Completed or failed: nothing more comes from undici. */
  private finished = false;

  constructor(
    private readonly resolve: (res: UpstreamResponse) => void,
    private readonly reject: (err: unknown) => void,
    private readonly signal: CallSignal | undefined,
    private readonly bufferLimit: number,
    /** A HEAD request: its answer has no body, whatever its content-length says. */
    private readonly bodiless = false,
    /** Told of a buffered body's start and of each of its chunks (its idle limit is the core's). */
    private readonly bodyWatch?: BodyWatch,
  ) {
    signal?.addEventListener('abort', this.onAbort);
  }

  private readonly onAbort = callbackOf(this, abortCall);

  /** The request's signal aborted: the engine request is given up. */
  abortNow(): void {
    this.abort?.(abortReason(this.signal as CallSignal));
  }

  /** The queue was drained: read the socket again. */
  resume(): void {
    this.resumeSocket?.();
  }

  /** The reader cancelled the answer: the request is aborted, which closes its connection. */
  cancel(): void {
    this.abort?.(cancelled());
  }

  private done(): void {
    this.finished = true;
    this.signal?.removeEventListener('abort', this.onAbort);
  }

  /**
   * After the read that brought a buffered body's head: the body's idle limit is watched only when
   * the body did not come whole with its head. A small answer usually does (undici parses it in one
   * go), and joining the core's idle list for it would set and clear that list's timer per request.
   */
  watchUnfinishedBody(): void {
    if (!this.finished) this.bodyWatch?.bodyProgress();
  }

  private answer(res: UpstreamResponse): void {
    this.answered = true;
    this.resolve(res);
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    if (this.signal?.aborted) abort(abortReason(this.signal));
  }

  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    if (status < 200) return true; // informational: the answer's own headers follow
    this.status = status;
    this.headers = util.parseHeaders(raw) as Headers;
    this.resumeSocket = resume;
    const length = this.headers['content-length'];
    const type = this.headers['content-type'];
    const streaming = typeof type === 'string' && type.includes('text/event-stream');
    if (this.bodiless || status === 204 || status === 304) {
      this.buffer = Buffer.alloc(0);
      return true;
    }
    if (typeof length === 'string' && !streaming) {
      const n = Number(length);
      if (n === 0 || (n > 0 && n <= this.bufferLimit)) {
        this.buffer = Buffer.allocUnsafe(n);
        // Checked once undici has parsed what arrived with the head (a microtask runs after it).
        if (n > 0 && this.bodyWatch) queueMicrotask(callbackOf(this, watchBody));
        return true;
      }
    }
    this.queue = new ChunkQueue(this);
    this.answer({ status, headers: this.headers, body: this.queue });
    return true;
  }

  onData(chunk: Buffer): boolean {
    const buffer = this.buffer;
    if (buffer === undefined) return this.queue?.push(chunk) ?? true;
    if (this.received + chunk.length > buffer.length) {
      this.abort?.(new Error('upstream body longer than its content-length'));
      return false;
    }
    chunk.copy(buffer, this.received);
    this.received += chunk.length;
    if (this.received < buffer.length) this.bodyWatch?.bodyProgress();
    return true;
  }

  onComplete(): void {
    this.done();
    const buffer = this.buffer;
    if (buffer === undefined) this.queue?.end();
    else if (this.received === buffer.length)
      this.answer({ status: this.status, headers: this.headers, body: buffer });
    else this.bodyBroke(new Error(`upstream body ended after ${this.received} of ${buffer.length} bytes`));
  }

  onError(err: Error): void {
    this.done();
    if (this.queue) this.queue.fail(err);
    else if (this.answered) return;
    else if (this.buffer !== undefined) this.bodyBroke(err);
    else this.reject(err);
  }

  private bodyBroke(err: unknown): void {
    const detail = err instanceof Error ? err.message : String(err);
    this.reject(
      new UpstreamBodyError(`the body broke after status ${this.status}: ${detail}`, this.status, {
        cause: err,
      }),
    );
  }
}
