/**
 * The attempt loop (retries). The decision is made on the status line, before any byte reaches the
 * client. A retryable status keeps the worker a candidate and retries after a backoff (so a single
 * engine still benefits); a transport failure excludes the worker and reroutes at once, backing off
 * only when every candidate is excluded (then the exclusions reset). Retries stop at the attempt
 * limit, at the request deadline, when `Retry-After` asks for too long, or when the retry budget is
 * spent; the last engine response then passes through as the engine sent it.
 */

import { RouterError } from '../contracts/errors.ts';
import type { AttemptOutcome, RoutedWorker, RouteInput, RouteResult } from '../contracts/fleet-api.ts';
import type { UpstreamResponse } from '../contracts/upstream.ts';
import { backoffDelayMs, maxAttempts, type RetrySettings, retryAfterMs } from '../resilience/backoff.ts';
import { outcomeForStatus } from '../resilience/classify.ts';
import type { Exchange } from './exchange.ts';

/** One leg to send: the regular request, or a prefill or decode leg. */
export interface Leg {
  /** What routing reads: model, routing text and keys. */
  input: RouteInput;
  role?: 'regular' | 'prefill' | 'decode';
  target: string;
  headers: Record<string, string>;
  body: Uint8Array | ReadableStream<Uint8Array> | null;
}

export type LegResult =
  | { kind: 'response'; res: UpstreamResponse; worker: RoutedWorker; lease: number; outcome: AttemptOutcome }
  | { kind: 'error'; error: RouterError; outcome?: AttemptOutcome }
  | { kind: 'aborted' };

const RETRY_AFTER_STATUSES = new Set([429, 503]);

/** Errors that mean a pooled keep-alive connection was already closed when we wrote to it. */
export function isStaleConnectionError(err: unknown): boolean {
  return (
    typeof err === 'object' && err !== null && (err as { staleConnection?: unknown }).staleConnection === true
  );
}

function discard(res: UpstreamResponse): void {
  if (res.body instanceof ReadableStream) res.body.cancel().catch(() => {});
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' ? `${code} ${err.message}` : err.message;
  }
  return String(err);
}

export async function runAttempts(ex: Exchange, leg: Leg): Promise<LegResult> {
  const { ctx } = ex;
  const { deps, instruments } = ctx;
  const buffered = !(leg.body instanceof ReadableStream);
  /** Retry settings for failures on the latest worker (its overrides win). */
  const settings = (): RetrySettings =>
    ex.worker?.retry === undefined ? ctx.retry : { ...ctx.retry, ...ex.worker.retry };
  const exclude: string[] = [];
  let backoffs = 0;
  let lastError: RouterError | undefined;

  /** Whether one more attempt may be made; counts the exhaustion or the spent budget otherwise. */
  const mayRetry = (): boolean => {
    const limit = buffered ? maxAttempts(settings()) : 1;
    if (ex.attempts >= limit) {
      if (limit > 1) instruments.retriesExhausted.labels(ex.call.route).inc();
      return false;
    }
    if (!ctx.budget.tryAcquire()) {
      instruments.budgetExhausted.inc();
      return false;
    }
    instruments.retries.labels(ex.call.route).inc();
    return true;
  };

  /** Backs off before the next attempt; false when the client left or the deadline passed. */
  const backOff = async (delay: number, reason: string): Promise<boolean> => {
    instruments.backoff.labels(String(ex.attempts)).observe(delay / 1000);
    if (deps.logger.enabled('debug')) {
      deps.logger.debug('retrying', {
        request_id: ex.call.requestId,
        attempt: ex.attempts,
        worker: ex.worker?.id,
        reason,
        delay_ms: Math.round(delay),
      });
    }
    backoffs++;
    return ex.sleep(delay);
  };

  const stopped = (): LegResult =>
    ex.clientGone
      ? { kind: 'aborted' }
      : {
          kind: 'error',
          error: new RouterError('upstream_timeout', `request timed out after ${ctx.timeoutMs} ms`),
        };

  for (;;) {
    let routed: RouteResult;
    try {
      routed = await deps.fleet.route({
        ...leg.input,
        ...(leg.role === undefined ? {} : { role: leg.role }),
        ...(exclude.length === 0 ? {} : { exclude }),
      });
    } catch (err) {
      // A policy may refuse a request it cannot route (least_loaded without a session id).
      if (err instanceof RouterError) return { kind: 'error', error: err };
      throw err;
    }

    if (!routed.ok) {
      if (routed.code === 'model_not_found') {
        const served = routed.models.length > 0 ? routed.models.join(', ') : 'none';
        const message = `model ${JSON.stringify(leg.input.model)} not found; served models: ${served}`;
        return { kind: 'error', error: new RouterError('model_not_found', message, { param: 'model' }) };
      }
      if (exclude.length > 0) {
        // Every candidate failed at the transport level: the pool gets another chance after a backoff.
        exclude.length = 0;
        if (
          !(await backOff(backoffDelayMs(settings(), backoffs, deps.random), 'all candidates unreachable'))
        ) {
          return stopped();
        }
        continue;
      }
      ex.attempts++;
      lastError = new RouterError('no_available_workers', 'no worker is available to serve this request');
      if (!mayRetry()) return { kind: 'error', error: lastError };
      if (!(await backOff(backoffDelayMs(settings(), backoffs, deps.random), 'no_available_workers'))) {
        return stopped();
      }
      continue;
    }

    ex.attempts++;
    ex.worker = routed.worker;
    let res: UpstreamResponse;
    try {
      res = await send(ex, leg, routed.worker);
    } catch (err) {
      if (ex.clientGone || ex.timedOut) {
        await deps.fleet.settle(routed.lease, ex.clientGone ? { kind: 'aborted' } : { kind: 'failure' });
        return stopped();
      }
      await deps.fleet.settle(routed.lease, { kind: 'failure' });
      lastError = new RouterError(
        'upstream_unreachable',
        `request to worker ${routed.worker.id} failed: ${describe(err)}`,
        { cause: err },
      );
      exclude.push(routed.worker.id);
      if (deps.logger.enabled('debug')) {
        deps.logger.debug('transport failure', {
          request_id: ex.call.requestId,
          worker: routed.worker.id,
          error: describe(err),
        });
      }
      if (!mayRetry()) return { kind: 'error', error: lastError, outcome: { kind: 'failure' } };
      continue; // reroute at once; back off only when no candidate is left
    }

    const outcome = outcomeForStatus(res.status, ctx.classes);
    if (!buffered || !ctx.classes.retryable.has(res.status)) {
      return { kind: 'response', res, worker: routed.worker, lease: routed.lease, outcome };
    }

    // A retryable status: decide before any byte reaches the client.
    let delay = backoffDelayMs(settings(), backoffs, deps.random);
    if (RETRY_AFTER_STATUSES.has(res.status)) {
      const raw = res.headers['retry-after'];
      const after = retryAfterMs(Array.isArray(raw) ? raw[0] : raw, deps.clock.now());
      if (after !== undefined) {
        if (after > settings().maxBackoffMs || after > ex.remainingMs()) {
          return { kind: 'response', res, worker: routed.worker, lease: routed.lease, outcome };
        }
        delay = Math.max(delay, after);
      }
    }
    if (delay >= ex.remainingMs() || !mayRetry()) {
      return { kind: 'response', res, worker: routed.worker, lease: routed.lease, outcome };
    }
    discard(res);
    await deps.fleet.settle(routed.lease, outcome);
    if (!(await backOff(delay, `status ${res.status}`))) return stopped();
  }
}

/** Sends one attempt; a stale pooled connection gets one immediate free resend. */
async function send(ex: Exchange, leg: Leg, worker: RoutedWorker): Promise<UpstreamResponse> {
  const { ctx } = ex;
  const headers: Record<string, string> = { ...leg.headers, 'x-request-id': ex.call.requestId };
  if (worker.dpRank !== undefined) headers['x-data-parallel-rank'] = String(worker.dpRank);
  if (ctx.apiKey !== undefined) headers.authorization = `Bearer ${ctx.apiKey}`;
  const request = {
    url: worker.url + leg.target,
    method: ex.call.method,
    headers,
    body: leg.body,
    signal: ex.signal,
  };
  try {
    return await ctx.deps.upstream(request);
  } catch (err) {
    if (!isStaleConnectionError(err) || leg.body instanceof ReadableStream || ex.signal.aborted) throw err;
    ctx.instruments.staleResends.inc();
    return ctx.deps.upstream(request);
  }
}
