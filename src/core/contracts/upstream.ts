/**
 * The upstream transport contract: a fetch-shaped function each runtime supplies (undici on Node,
 * the Web `fetch` on Deno and Workers, an in-memory function in tests).
 */

/** A request to an engine. Headers are a plain object (lowercase names): cheaper than `Headers`. */
export interface UpstreamRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: Uint8Array | ReadableStream<Uint8Array> | null;
  signal: CallSignal;
  /**
   * Told when the transport starts reading an answer's body whole before it answers (its head
   * arrived), and again as each of that body's chunks arrives (where the transport sees them), so
   * the core can hold the body to its idle limit: the transport itself sets no timer. A transport
   * may leave out the first call for a body that came whole with its head (nothing to wait for).
   */
  bodyWatch?: BodyWatch;
}

/** See `UpstreamRequest.bodyWatch`. */
export interface BodyWatch {
  bodyProgress(): void;
}

/**
 * What a transport watches to give a request up. An `AbortSignal` fits; the router's attempts pass
 * a lighter one of their own (core/upstream/call-signal.ts), since an AbortController and its
 * EventTarget cost more than the rest of an attempt's bookkeeping. A transport that needs a real
 * `AbortSignal` (the Web `fetch`) makes one from it with `abortSignalOf`.
 */
export interface CallSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** One reader of a streamed answer: `read` resolves with the next chunk; `cancel` stops the engine's body. */
export interface ChunkReader {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  /**
   * `read` without a promise, where the reader offers it: exactly one of the two callbacks is called,
   * once, with what `read` would have settled with, possibly before `pull` returns (a chunk already
   * in). A chunk then goes from the socket to the client in one synchronous call chain, with no step
   * of the microtask queue per chunk and per reader on its way.
   */
  pull?(
    onResult: (result: ReadableStreamReadResult<Uint8Array>) => void,
    onError: (error: unknown) => void,
  ): void;
  cancel(reason?: unknown): Promise<void>;
}

/**
 * A streamed answer as the core reads it: a Web `ReadableStream` fits (Deno, Workers, tests), and a
 * transport may hand over a lighter source of its own (Node: chunks straight from the socket's
 * stream), so that the relay to the client is the only stream a chunk passes through.
 */
export interface ChunkSource {
  getReader(): ChunkReader;
  cancel(reason?: unknown): Promise<void>;
}

/**
 * An engine's answer. `body` is either the whole body (transports may buffer small bodies that
 * announced a content-length) or a source delivering chunks as they arrive.
 */
export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: Uint8Array | ChunkSource | null;
}

/** The upstream transport: fetch-shaped, so any runtime's HTTP client fits behind it. */
export type Upstream = (req: UpstreamRequest) => Promise<UpstreamResponse>;

/**
 * Thrown by a transport when a pooled keep-alive connection turned out to be closed before any
 * response byte arrived: the request never reached the engine, so the core resends it once, free.
 */
export class StaleConnectionError extends Error {
  override readonly name = 'StaleConnectionError';
  readonly code: string | undefined;

  constructor(message: string, options: { cause?: unknown; code?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/**
 * Thrown by a transport that reads a body whole before answering (a small body with a
 * content-length) when the body breaks after the status arrived. The engine has answered, so the
 * core never sends the request again (that would be a second generation): the client sees a
 * failure.
 */
export class UpstreamBodyError extends Error {
  override readonly name = 'UpstreamBodyError';

  constructor(
    message: string,
    readonly status: number,
    options: { cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }
}
