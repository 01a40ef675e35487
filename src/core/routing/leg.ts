/** A leg to send (the regular request, a prefill or a decode leg) and the shapes the attempt steps exchange. */
import type { RouterError } from '../contracts/errors.ts';
import type { AttemptOutcome, RoutedWorker, RouteInput } from '../contracts/fleet-api.ts';
import type { ChunkReader, UpstreamResponse } from '../contracts/upstream.ts';
import type { AttemptTracker } from './stall-watch.ts';

/** One leg to send: the regular request, or a prefill or decode leg. */
export interface Leg {
  /** What routing reads: model, routing text and keys. */
  input: RouteInput;
  role?: 'regular' | 'prefill' | 'decode';
  target: string;
  headers: Record<string, string>;
  body: Uint8Array | ReadableStream<Uint8Array> | null;
  /** The answer streams (SSE): its first chunk is awaited before the answer is committed. */
  stream?: boolean;
  /** The body for one worker, when it depends on the worker (prefill/decode legs); else `body`. */
  bodyFor?: (worker: RoutedWorker) => Uint8Array;
  /** The engine-facing request id, when it depends on the worker (P2P-NCCL); else the request's. */
  requestIdFor?: (worker: RoutedWorker) => string;
  /**
   * Whether this leg may still be sent to `worker` (checked before every send): false withdraws the
   * leg (its lease given back) so the caller can start over, e.g. a decode leg past the prefill's
   * KV hold time, or a P2P-NCCL decode leg rerouted away from the worker its prefill pushed to.
   */
  admits?: (worker: RoutedWorker) => boolean;
  /** A leg running beside the answering one (concurrent prefill): it never names the answering worker. */
  background?: boolean;
  /**
   * Retries stay on the worker of the first attempt (a concurrent prefill: the decode already names
   * it): a retryable answer that would move the leg elsewhere passes through instead.
   */
  pinned?: boolean;
}

/** A stream's first read, taken before the answer was committed; the relay continues from it. */
export interface Prefetched {
  reader: ChunkReader;
  first: ReadableStreamReadResult<Uint8Array>;
}

export type LegResult =
  | {
      kind: 'response';
      res: UpstreamResponse;
      worker: RoutedWorker;
      lease: number;
      outcome: AttemptOutcome;
      prefetched?: Prefetched;
    }
  | { kind: 'error'; error: RouterError; outcome?: AttemptOutcome }
  | { kind: 'aborted' }
  /** The leg's `admits` turned the next worker down, or the leg was called off (`AttemptRun.callOff`). */
  | { kind: 'withdrawn'; worker?: RoutedWorker };

/** A worker and lease the fleet gave for the next attempt. */
export interface Routed {
  kind: 'routed';
  worker: RoutedWorker;
  lease: number;
  /** Back off this long before sending (the only worker left is one that asked to wait). */
  waitMs?: number;
}

/** A response the engine sent, with what the loop knows about its attempt. */
export interface Answered {
  worker: RoutedWorker;
  lease: number;
  res: UpstreamResponse;
  tracker: AttemptTracker;
  /** Known already when the transport delivered the whole body. */
  firstByteMs?: number;
}

/** What a step says comes next: the leg's result, another attempt (routed already, or not), or a wait. */
export type Next =
  | { kind: 'done'; result: LegResult }
  | { kind: 'again' }
  | Routed
  | { kind: 'wait'; delay: number; reason: string };
