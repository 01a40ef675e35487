/**
 * Sending one attempt, and, for a streamed answer, awaiting its first chunk before the answer is
 * committed (nothing reaches the client before it). Every attempt is tracked by the stall watch,
 * which may abandon it while it waits for its first byte; an abandoned attempt is retried
 * elsewhere. A failure after the engine's status arrived (its body broke) is never retried.
 * Client faults (an upload over the size limit) are answered to the client and recorded on no
 * engine. A transport failure's detail (socket errors, addresses) goes to the log line only: the
 * client gets a generic message with the request id.
 */
import { RouterError } from '../contracts/errors.ts';
import type { AttemptOutcome, RoutedWorker } from '../contracts/fleet-api.ts';
import {
  type CallSignal,
  type ChunkReader,
  type ChunkSource,
  StaleConnectionError,
  UpstreamBodyError,
  type UpstreamRequest,
  type UpstreamResponse,
} from '../contracts/upstream.ts';
import { streamedBody } from '../upstream/body.ts';
import type { AttemptRun } from './attempt-run.ts';
import type { Answered, Next, Routed } from './leg.ts';
import type { AttemptTracker } from './stall-watch.ts';

export type Sent = { kind: 'sent'; answered: Answered };

function describeOne(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' && !err.message.includes(code) ? `${code} ${err.message}` : err.message;
  }
  return String(err);
}

/** A transport error for the log: its code and message, and its causes' (fetch wraps the socket's). */
export function transportDetail(err: unknown): string {
  let out = describeOne(err);
  let cause = err instanceof Error ? err.cause : undefined;
  for (let depth = 0; cause !== undefined && depth < 3; depth++) {
    const detail = describeOne(cause);
    // A wrapper that already quotes its cause (an UpstreamBodyError) says it once.
    if (!out.endsWith(detail)) out += `: ${detail}`;
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return out;
}

const errorNext = (error: RouterError, outcome?: AttemptOutcome): Next => ({
  kind: 'done',
  result: outcome ? { kind: 'error', error, outcome } : { kind: 'error', error },
});

/**
 * Bodies this large are never resent for free on a stale connection. SMG (docs "Resending
 * Pre-Response Failures") resends a pre-response transport failure once, at once, with no backoff
 * and no retry attempt, even with --disable-retries, but not for timeouts, streamed request bodies,
 * or bodies of 1 MiB or more (sent as one-shot streams it cannot replay at that layer). Such a
 * failure is an ordinary failed attempt here: the retry rules decide whether another attempt follows.
 */
export const FREE_RESEND_MAX_BYTES = 1 << 20;

/** Whether a stale pooled connection earns this send its one immediate free resend. */
function resendsFree(err: unknown, body: Uint8Array | ReadableStream<Uint8Array> | null, signal: CallSignal) {
  if (!(err instanceof StaleConnectionError) || signal.aborted) return false;
  return body === null || (body instanceof Uint8Array && body.byteLength < FREE_RESEND_MAX_BYTES);
}

/** One attempt's request to `worker`: the leg's target, headers and body for it. */
function attemptRequest(run: AttemptRun, worker: RoutedWorker, signal: CallSignal): UpstreamRequest {
  const { ex, leg } = run;
  const { ctx } = ex;
  const requestId = leg.requestIdFor ? leg.requestIdFor(worker) : ex.call.requestId;
  let headers = leg.headers;
  // The leg's headers as they are when they already carry the id and nothing names the worker or
  // adds the router's key (the usual request: the intake put the id in); else a copy per attempt.
  if (headers['x-request-id'] !== requestId || worker.dpRank !== undefined || ctx.apiKey !== undefined) {
    headers = { ...headers, 'x-request-id': requestId };
    if (worker.dpRank !== undefined) headers['x-data-parallel-rank'] = String(worker.dpRank);
    if (ctx.apiKey !== undefined) headers.authorization = `Bearer ${ctx.apiKey}`;
  }
  const body = leg.bodyFor ? leg.bodyFor(worker) : leg.body;
  return { url: worker.url + leg.target, method: ex.call.method, headers, body, signal, bodyWatch: run };
}

/** The stall watch gave up on this attempt: record it, exclude the worker, try elsewhere. */
async function abandoned(run: AttemptRun, worker: RoutedWorker, lease: number, tracker: AttemptTracker) {
  const { ex } = run;
  const canary = tracker.abandoned === 'canary';
  await run.settle(worker, lease, canary ? { kind: 'neutral' } : { kind: 'failure', stalled: true });
  run.exclude.push(worker.id);
  ex.ctx.deps.logger.warn('attempt abandoned: no progress from its worker', {
    request_id: ex.call.requestId,
    worker: worker.id,
    reason: tracker.abandoned,
  });
  if (run.mayRetry()) return { kind: 'again' } as const;
  const message = `worker ${worker.id} made no progress (${tracker.abandoned})`;
  return errorNext(new RouterError('upstream_timeout', message), { kind: 'failure' });
}

/** Why a send failed decides what the loop does next. */
async function failedSend(
  run: AttemptRun,
  attempt: { worker: RoutedWorker; lease: number; tracker: AttemptTracker },
  err: unknown,
): Promise<Next> {
  const { ex } = run;
  const { worker, lease, tracker } = attempt;
  const { fleet, logger } = ex.ctx.deps;
  if (run.off) {
    await fleet.settle(lease, { kind: 'aborted' });
    return { kind: 'done', result: { kind: 'withdrawn', worker } };
  }
  if (ex.stopped) {
    await fleet.settle(lease, ex.timedOut ? { kind: 'failure' } : { kind: 'aborted' });
    return { kind: 'done', result: run.stopped() };
  }
  const fault = ex.call.uploadFault?.();
  if (fault) {
    await fleet.settle(lease, { kind: 'aborted' }); // the client's fault, not the engine's
    return errorNext(fault);
  }
  if (tracker.abandoned) return abandoned(run, worker, lease, tracker);
  if (err instanceof UpstreamBodyError) {
    await run.settle(worker, lease, { kind: 'failure', status: err.status, stalled: true });
    const message = `the worker's response broke after its status (request id ${ex.call.requestId})`;
    return errorNext(new RouterError('upstream_body_error', message, { cause: err }), { kind: 'failure' });
  }
  await run.settle(worker, lease, { kind: 'failure' });
  run.exclude.push(worker.id);
  if (logger.enabled('debug')) {
    logger.debug('transport failure', {
      request_id: ex.call.requestId,
      worker: worker.id,
      error: transportDetail(err),
    });
  }
  if (run.mayRetry()) return { kind: 'again' }; // reroute at once; back off only when no candidate is left
  const message = `worker connection failed (request id ${ex.call.requestId})`;
  return errorNext(new RouterError('upstream_unreachable', message, { cause: err }), { kind: 'failure' });
}

/**
 * Before a routed attempt is sent: its backoff, when the only worker left asked to wait, and the
 * leg's say (called off, or this worker no longer admitted). A result when it must not be sent.
 */
async function heldBack(run: AttemptRun, routed: Routed): Promise<Next | undefined> {
  const { fleet } = run.ex.ctx.deps;
  if (routed.waitMs !== undefined && !(await run.backOff(routed.waitMs, 'engine asked to wait'))) {
    await fleet.settle(routed.lease, { kind: 'aborted' });
    return { kind: 'done', result: run.stopped() };
  }
  if (run.off || (run.leg.admits && !run.leg.admits(routed.worker))) {
    await fleet.settle(routed.lease, { kind: 'aborted' });
    return { kind: 'done', result: { kind: 'withdrawn', worker: routed.worker } };
  }
  return undefined;
}

/**
 * Sends to the routed worker (unless the leg holds the attempt back); a failure settles the lease
 * and says what comes next. A stale pooled connection gets one immediate free resend (small bodies).
 */
export async function sendStep(run: AttemptRun, routed: Routed): Promise<Sent | Next> {
  if (routed.waitMs !== undefined || run.off || run.leg.admits) {
    const stop = await heldBack(run, routed);
    if (stop) return stop;
  }
  const { worker, lease } = routed;
  const { ex } = run;
  const { ctx } = ex;
  const watch = ctx.stalls;
  ex.attempts++;
  run.worker = worker;
  if (run.leg.background !== true) ex.worker = worker;
  const tracker = watch.begin(worker.id, run.leg.stream === true);
  tracker.onAbandon = run.abandonCall;
  let request: UpstreamRequest | undefined;
  let res: UpstreamResponse | undefined;
  for (let resent = false; res === undefined; resent = true) {
    try {
      request ??= attemptRequest(run, worker, run.attemptSignal);
      res = await ctx.deps.upstream(request);
    } catch (err) {
      if (resent || request === undefined || !resendsFree(err, request.body, request.signal)) {
        watch.end(tracker);
        return failedSend(run, { worker, lease, tracker }, err);
      }
      ctx.instruments.staleResends.inc();
    } finally {
      run.bodySettled();
    }
  }
  const answered: Answered = { worker, lease, res, tracker };
  if (!streamedBody(res.body)) answered.firstByteMs = watch.firstByte(tracker);
  return { kind: 'sent', answered };
}

/** Reads a streamed answer's first chunk; the stall watch may abandon the wait. */
async function readFirst(reader: ChunkReader, signal: CallSignal) {
  const cancel = () => void reader.cancel(signal.reason).catch(() => {});
  if (signal.aborted) cancel();
  else signal.addEventListener('abort', cancel, { once: true });
  try {
    return { ok: true as const, first: await reader.read() };
  } catch (error) {
    return { ok: false as const, error };
  } finally {
    signal.removeEventListener('abort', cancel);
  }
}

/** The answer is decided: wait for its first chunk, then commit it (or retry an abandoned attempt). */
export async function firstByteStep(run: AttemptRun, a: Answered, outcome: AttemptOutcome): Promise<Next> {
  const { ex } = run;
  const { worker, lease, res, tracker } = a;
  const body = res.body as ChunkSource;
  const reader = body.getReader();
  const read = await readFirst(reader, run.attemptSignal);
  if (tracker.abandoned && run.buffered) return abandoned(run, worker, lease, tracker);
  if (!read.ok || tracker.abandoned) {
    ex.ctx.stalls.end(tracker);
    if (ex.stopped || run.off)
      return failedSend(run, { worker, lease, tracker }, read.ok ? undefined : read.error);
    await run.settle(worker, lease, { kind: 'failure', status: res.status, stalled: true });
    const message = `the worker's stream broke before its first chunk (request id ${ex.call.requestId})`;
    const cause = read.ok ? undefined : { cause: read.error };
    return errorNext(new RouterError('upstream_body_error', message, cause), { kind: 'failure' });
  }
  outcome.firstByteMs = ex.ctx.stalls.firstByte(tracker); // decideStep's fresh outcome
  const prefetched = { reader, first: read.first };
  return { kind: 'done', result: { kind: 'response', res, worker, lease, outcome, prefetched } };
}
