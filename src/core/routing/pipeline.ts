/**
 * The request pipeline: run the attempt loop for the request's leg, then answer. The response body
 * is relayed chunk by chunk; its end, error or cancellation finishes the exchange (lease settled,
 * metrics and log line) exactly once. Clients never see a transport error's detail (socket errors,
 * addresses): their messages are generic and carry the request id; the log line has the detail.
 * Streamed answers are timed per chunk (first chunk, gaps between chunks); a successful JSON or SSE
 * answer's token counts are read from its end (usage.ts), never by parsing it.
 */
import type { Answer } from '../contracts/answer.ts';
import { errorAnswer, RouterError } from '../contracts/errors.ts';
import type { AttemptOutcome } from '../contracts/fleet-api.ts';
import type { ChunkSource } from '../contracts/upstream.ts';
import { ChunkTail } from '../observability/usage.ts';
import { transportDetail } from './attempt-send.ts';
import { runAttempts } from './attempts.ts';
import type { PipelineContext, ProxyCall } from './context.ts';
import { Exchange } from './exchange.ts';
import { clientResponseHeaders, isEventStream } from './headers.ts';
import type { Leg, LegResult, Prefetched } from './leg.ts';
import { runPd } from './pd-flow.ts';
import { relaySource } from './stream-relay.ts';

export type { PipelineContext, ProxyCall } from './context.ts';

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/** Answers a request rejected before routing (bad input), recording it like any other. */
export function rejectRequest(
  ctx: PipelineContext,
  call: { route: string; method: string; requestId: string; client?: string | undefined },
  error: RouterError,
): Answer {
  const { instruments, deps } = ctx;
  // Refused before the body was read or understood: no model to name.
  instruments.requests.labels(call.route, call.method, String(error.status), '').inc();
  instruments.errors.labels(call.route, error.code, '').inc();
  deps.logger.log(error.status >= 500 ? 'warn' : 'info', 'request rejected', {
    request_id: call.requestId,
    method: call.method,
    route: call.route,
    status: error.status,
    client: call.client,
    error: error.code,
  });
  return errorAnswer(error, { 'x-request-id': call.requestId });
}

/** The request's plan: one leg (a regular request), or a prefill leg then a decode leg. */
function runPlan(ex: Exchange, call: ProxyCall): Promise<LegResult> {
  const { pd } = ex.ctx;
  if (pd && call.json) return runPd(ex, call, pd, call.json);
  const leg: Leg = {
    input: call.info, // its `stream` is the leg's own
    target: call.target,
    headers: call.headers,
    body: call.body,
    stream: call.info.stream,
  };
  // With prefill/decode pools, requests that are not split (embeddings, tokenize, ...) go to decode.
  if (pd) leg.role = 'decode';
  return runAttempts(ex, leg);
}

export async function proxyRequest(ctx: PipelineContext, call: ProxyCall): Promise<Answer> {
  const ex = new Exchange(ctx, call);
  ctx.budget.recordRequest();
  let result: LegResult;
  try {
    result = await runPlan(ex, call);
  } catch (err) {
    ex.finish(500, undefined, 'internal_error'); // the permit and the timer must not leak
    throw err;
  }
  if (result.kind === 'aborted') {
    // Nobody is listening; the status is for the log and metrics only.
    ex.finish(499, undefined, 'client_disconnected');
    return { status: 499, headers: {}, body: null };
  }
  if (result.kind === 'error') return fail(ex, result.error);
  if (result.kind === 'withdrawn') {
    return fail(ex, new RouterError('no_available_workers', 'no worker is available to serve this request'));
  }

  const { res, worker, lease, outcome, prefetched } = result;
  ex.lease = lease;
  ex.respondedAt = ctx.deps.clock.monotonic();
  const headers = clientResponseHeaders(res.headers);
  headers['x-request-id'] = call.requestId;
  if (ctx.routedWorkerHeader) setRoutedWorker(headers, worker.id);
  headers['x-router-attempts'] = String(ex.attempts);
  let body = res.body;
  if (body !== null && NULL_BODY_STATUSES.has(res.status)) {
    if (prefetched) prefetched.reader.cancel().catch(() => {});
    else if (!(body instanceof Uint8Array)) body.cancel().catch(() => {});
    body = null;
  }
  const usage = reportsUsage(res.status, headers);
  if (body === null || body instanceof Uint8Array) {
    if (usage && body !== null) ex.usageFrom = body;
    ex.finish(res.status, outcome);
    return { status: res.status, headers, body };
  }
  const relayed = relayAnswer(ex, result, prefetched ?? body, isEventStream(headers), usage);
  // Without a prefetched chunk (an error status passed through as it streams), the head must not
  // wait for an engine that may stall after its status line.
  const answer: Answer = { status: res.status, headers, body: relayed };
  if (!prefetched) answer.flushHead = true;
  return answer;
}

type Responded = Extract<LegResult, { kind: 'response' }>;

/** A streamed answer, relayed chunk by chunk and timed; its end, error or cancellation finishes the exchange. */
function relayAnswer(
  ex: Exchange,
  { res, worker, outcome }: Responded,
  src: ChunkSource | Prefetched,
  sse: boolean,
  usage: boolean,
): ChunkSource {
  const { ctx, call } = ex;
  const idleMs = call.info.stream ? ctx.idleTimeoutMs.stream : ctx.idleTimeoutMs.plain;
  const tail = usage ? new ChunkTail() : undefined;
  // Inter-token latency of a stream: its series looked up once, one observation per chunk.
  const gaps = call.info.stream ? ctx.instruments.itl.labels(ex.modelLabel(), worker.id) : undefined;
  return relaySource(src, {
    sse,
    clock: ctx.deps.clock,
    onFirstChunk: (at) => {
      ex.firstChunkAt = at;
    },
    ...(gaps ? { onGap: (ms: number) => gaps.observe(ms / 1000) } : {}),
    ...(tail ? { tail } : {}),
    onChunk: (at) => ctx.stalls.progress(worker.id, at),
    deadline: { onStop: (hook) => ex.onStop(hook), passed: () => ex.timedOut || ex.shutDown },
    ...(idleMs > 0 ? { idle: { ms: idleMs, clock: ctx.deps.clock, watch: ctx.idleWatch } } : {}),
    onDone: (end, error) => {
      if (end === 'end') {
        if (tail) ex.usageFrom = tail;
        ex.finish(res.status, outcome);
      } else if (ex.shutDown) streamCut(ex, res.status);
      else if (end === 'cancel' || ex.clientGone)
        ex.finish(res.status, { kind: 'aborted' }, 'client_disconnected');
      else streamFailed(ex, res.status, error);
    },
    describeError: () => streamErrorMessage(ex),
    errorType: () => (ex.shutDown ? 'shutdown' : undefined),
  });
}

/** A successful, uncompressed JSON or SSE answer: it may end with the engine's `usage`. */
function reportsUsage(status: number, headers: Record<string, string>): boolean {
  if (status < 200 || status >= 300 || headers['content-encoding'] !== undefined) return false;
  const type = headers['content-type'];
  return type !== undefined && (type.includes('json') || type.includes('event-stream'));
}

/** The answering worker, under vllm-router's name and SMG's (smg #2183): the same value. */
function setRoutedWorker(headers: Record<string, string>, id: string): void {
  headers['x-routed-worker-id'] = id;
  headers['x-smg-routed-worker-id'] = id;
}

function fail(ex: Exchange, error: RouterError): Answer {
  ex.finish(error.status, undefined, error.code);
  const headers: Record<string, string> = { 'x-request-id': ex.call.requestId };
  if (ex.worker && ex.ctx.routedWorkerHeader) setRoutedWorker(headers, ex.worker.id);
  if (ex.attempts > 0) headers['x-router-attempts'] = String(ex.attempts);
  if (error.status >= 500) {
    ex.ctx.deps.logger.warn(error.message, {
      request_id: ex.call.requestId,
      worker: ex.worker?.id,
      error: error.cause === undefined ? undefined : transportDetail(error.cause),
    });
  }
  return errorAnswer(error, headers);
}

function streamFailed(ex: Exchange, status: number, error: unknown): void {
  const worker = ex.worker?.id ?? '';
  ex.ctx.instruments.streamErrors.labels(worker).inc();
  ex.ctx.deps.logger.warn('upstream stream broke', {
    request_id: ex.call.requestId,
    worker,
    error: streamErrorMessage(ex) + (error === undefined ? '' : `: ${transportDetail(error)}`),
  });
  // A broken answer keeps new requests off the engine a while (unless our own deadline cut it).
  const outcome: AttemptOutcome = ex.timedOut
    ? { kind: 'failure', status }
    : { kind: 'failure', status, stalled: true };
  ex.finish(status, outcome, 'upstream_stream_error');
}

/** The router shut down before the stream ended: the client got the shutdown event. */
function streamCut(ex: Exchange, status: number): void {
  ex.ctx.deps.logger.warn('stream cut by the shutdown', {
    request_id: ex.call.requestId,
    worker: ex.worker?.id,
  });
  ex.finish(status, { kind: 'aborted' }, 'shutdown');
}

function streamErrorMessage(ex: Exchange): string {
  if (ex.shutDown) return 'router shutting down';
  const id = ex.call.requestId;
  if (ex.timedOut) return `request timed out after ${ex.ctx.timeoutMs} ms while streaming (request id ${id})`;
  // The SSE error event's message too: generic (the worker and the cause are in the log line).
  return `upstream stream error (request id ${id})`;
}
