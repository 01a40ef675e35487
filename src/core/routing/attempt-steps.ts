/**
 * The steps of one attempt (attempts.ts runs them in a loop): route the leg to a worker, send it
 * there, and decide from the status line whether the response is the answer or the leg tries again.
 */
import { RouterError } from '../contracts/errors.ts';
import type { RoutedWorker, RouteResult } from '../contracts/fleet-api.ts';
import { StaleConnectionError, type UpstreamResponse } from '../contracts/upstream.ts';
import { retryAfterMs } from '../resilience/backoff.ts';
import { outcomeForStatus } from '../resilience/classify.ts';
import type { AttemptRun, Next } from './attempt-run.ts';

const RETRY_AFTER_STATUSES = new Set([429, 503]);

export type Routed = { kind: 'routed'; worker: RoutedWorker; lease: number };
export type Sent = { kind: 'sent'; res: UpstreamResponse };

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' ? `${code} ${err.message}` : err.message;
  }
  return String(err);
}

function discard(res: UpstreamResponse): void {
  if (res.body instanceof ReadableStream) res.body.cancel().catch(() => {});
}

/** Asks the fleet for a worker; without one, says whether to wait and try again or give up. */
export async function routeStep(run: AttemptRun): Promise<Routed | Next> {
  const { ex, leg, exclude } = run;
  let routed: RouteResult;
  try {
    routed = await ex.ctx.deps.fleet.route({
      ...leg.input,
      ...(leg.role === undefined ? {} : { role: leg.role }),
      ...(exclude.length === 0 ? {} : { exclude }),
    });
  } catch (err) {
    // A policy may refuse a request it cannot route (least_loaded without a session id).
    if (err instanceof RouterError) return { kind: 'done', result: { kind: 'error', error: err } };
    throw err;
  }
  if (routed.ok) {
    ex.attempts++;
    ex.worker = routed.worker;
    return { kind: 'routed', worker: routed.worker, lease: routed.lease };
  }
  if (routed.code === 'model_not_found') {
    const served = routed.models.length > 0 ? routed.models.join(', ') : 'none';
    const message = `model ${JSON.stringify(leg.input.model)} not found; served models: ${served}`;
    const error = new RouterError('model_not_found', message, { param: 'model' });
    return { kind: 'done', result: { kind: 'error', error } };
  }
  if (exclude.length > 0) {
    // Every candidate failed at the transport level: the pool gets another chance after a backoff.
    exclude.length = 0;
    return { kind: 'wait', delay: run.nextDelay(), reason: 'all candidates unreachable' };
  }
  ex.attempts++;
  if (!run.mayRetry()) {
    const error = new RouterError('no_available_workers', 'no worker is available to serve this request');
    return { kind: 'done', result: { kind: 'error', error } };
  }
  return { kind: 'wait', delay: run.nextDelay(), reason: 'no_available_workers' };
}

/** Sends one attempt; a stale pooled connection gets one immediate free resend. */
async function send(run: AttemptRun, worker: RoutedWorker): Promise<UpstreamResponse> {
  const { ex, leg } = run;
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
    if (!(err instanceof StaleConnectionError) || !run.buffered || ex.signal.aborted) throw err;
    ctx.instruments.staleResends.inc();
    return ctx.deps.upstream(request);
  }
}

/** Sends to the routed worker; a transport failure settles the lease and excludes the worker. */
export async function sendStep(run: AttemptRun, worker: RoutedWorker, lease: number): Promise<Sent | Next> {
  const { ex } = run;
  const { fleet, logger } = ex.ctx.deps;
  try {
    return { kind: 'sent', res: await send(run, worker) };
  } catch (err) {
    if (ex.clientGone || ex.timedOut) {
      await fleet.settle(lease, ex.clientGone ? { kind: 'aborted' } : { kind: 'failure' });
      return { kind: 'done', result: run.stopped() };
    }
    await fleet.settle(lease, { kind: 'failure' });
    run.exclude.push(worker.id);
    if (logger.enabled('debug')) {
      logger.debug('transport failure', {
        request_id: ex.call.requestId,
        worker: worker.id,
        error: describe(err),
      });
    }
    if (run.mayRetry()) return { kind: 'again' }; // reroute at once; back off only when no candidate is left
    const message = `request to worker ${worker.id} failed: ${describe(err)}`;
    const error = new RouterError('upstream_unreachable', message, { cause: err });
    return { kind: 'done', result: { kind: 'error', error, outcome: { kind: 'failure' } } };
  }
}

/** The delay a retryable status asks for, or undefined when it must pass through instead. */
function retryDelay(run: AttemptRun, res: UpstreamResponse): number | undefined {
  let delay = run.nextDelay();
  if (RETRY_AFTER_STATUSES.has(res.status)) {
    const raw = res.headers['retry-after'];
    const after = retryAfterMs(Array.isArray(raw) ? raw[0] : raw, run.ex.ctx.deps.clock.now());
    if (after !== undefined) {
      if (after > run.settings().maxBackoffMs || after > run.ex.remainingMs()) return undefined;
      delay = Math.max(delay, after);
    }
  }
  if (delay >= run.ex.remainingMs() || !run.mayRetry()) return undefined;
  return delay;
}

/** On the status line, before any byte reaches the client: answer with this response, or retry. */
export async function decideStep(
  run: AttemptRun,
  attempt: { worker: RoutedWorker; lease: number; res: UpstreamResponse },
): Promise<Next> {
  const { ctx } = run.ex;
  const { res, worker, lease } = attempt;
  const outcome = outcomeForStatus(res.status, ctx.classes);
  const answer: Next = { kind: 'done', result: { kind: 'response', res, worker, lease, outcome } };
  if (!run.buffered || !ctx.classes.retryable.has(res.status)) return answer;
  const delay = retryDelay(run, res);
  if (delay === undefined) return answer;
  discard(res);
  await ctx.deps.fleet.settle(lease, outcome);
  return { kind: 'wait', delay, reason: `status ${res.status}` };
}
