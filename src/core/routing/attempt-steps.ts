/**
 * Routing and deciding, the steps around a send (attempt-send.ts sends): ask the fleet for a
 * worker, then decide from the status line whether the response is the answer or the leg tries
 * again. A retryable status moves the retry to another eligible engine at once when one exists;
 * only when the engine that pushed back is the last one does the retry wait (backoff, Retry-After).
 */
import { RouterError } from '../contracts/errors.ts';
import type { AttemptOutcome, MaybePromise, RouteResult } from '../contracts/fleet-api.ts';
import type { UpstreamResponse } from '../contracts/upstream.ts';
import { retryAfterMs } from '../resilience/backoff.ts';
import { outcomeForStatus } from '../resilience/classify.ts';
import { discardBody, streamedBody } from '../upstream/body.ts';
import type { AttemptRun } from './attempt-run.ts';
import { firstByteStep } from './attempt-send.ts';
import type { Answered, Next, Routed } from './leg.ts';

const RETRY_AFTER_STATUSES = new Set([429, 503]);

const errorNext = (error: RouterError): Next => ({ kind: 'done', result: { kind: 'error', error } });

/** A policy may refuse a request it cannot route (least_loaded without a session id). */
function refused(err: unknown): Next {
  if (err instanceof RouterError) return errorNext(err);
  throw err;
}

/** The decision is made: the routing text may go (AttemptRun.releaseText). */
function textDone(run: AttemptRun, routed: RouteResult): RouteResult {
  run.releaseText();
  return routed;
}

/**
 * One routing call: the leg's input, its hard exclusions, and what it should avoid. An in-memory
 * fleet answers at once, and so does this (no promise per request); a remote one (a Durable
 * Object) answers with a promise.
 */
function askFleet(run: AttemptRun, alsoAvoid?: string): MaybePromise<RouteResult | Next> {
  const { ex, exclude } = run;
  const suspects = ex.ctx.stalls.suspects();
  const avoid =
    run.avoid.length === 0 && suspects.length === 0 && alsoAvoid === undefined
      ? run.avoid
      : [...run.avoid, ...suspects, ...(alsoAvoid === undefined ? [] : [alsoAvoid])];
  let input = run.routeInput;
  if (exclude.length > 0 || avoid.length > 0) {
    input = { ...input };
    if (exclude.length > 0) input.exclude = exclude;
    if (avoid.length > 0) input.avoid = avoid;
  }
  try {
    const routed = ex.ctx.deps.fleet.route(input);
    // Decided: the text goes until a retry asks again (AttemptRun.releaseText).
    if (routed instanceof Promise) return routed.then((r) => textDone(run, r)).catch(refused);
    run.releaseText();
    return routed;
  } catch (err) {
    return refused(err);
  }
}

/** Asks the fleet for a worker; without one, says whether to wait and try again or give up. */
export function routeStep(run: AttemptRun): MaybePromise<Routed | Next> {
  const routed = askFleet(run);
  return routed instanceof Promise ? routed.then((r) => afterRoute(run, r)) : afterRoute(run, routed);
}

function afterRoute(run: AttemptRun, routed: RouteResult | Next): Routed | Next {
  if ('kind' in routed) return routed;
  const { leg, exclude } = run;
  if (routed.ok) {
    run.tries++;
    return { kind: 'routed', worker: routed.worker, lease: routed.lease };
  }
  if (routed.code === 'model_not_found') {
    const served = routed.models.length > 0 ? routed.models.join(', ') : 'none';
    const message = `model ${JSON.stringify(leg.input.model)} not found; served models: ${served}`;
    return errorNext(new RouterError('model_not_found', message, { param: 'model' }));
  }
  if (exclude.length > 0) {
    // Every candidate failed at the transport level: the pool gets another chance after a backoff.
    exclude.length = 0;
    return { kind: 'wait', delay: run.nextDelay(), reason: 'all candidates unreachable' };
  }
  run.tries++;
  if (!run.mayRetry()) {
    return errorNext(new RouterError('no_available_workers', 'no worker is available to serve this request'));
  }
  return { kind: 'wait', delay: run.nextDelay(), reason: 'no_available_workers' };
}

/** The engine's Retry-After, in ms, when the status carries one. */
function engineRetryAfter(run: AttemptRun, res: UpstreamResponse): number | undefined {
  if (!RETRY_AFTER_STATUSES.has(res.status)) return undefined;
  const raw = res.headers['retry-after'];
  return retryAfterMs(Array.isArray(raw) ? raw[0] : raw, run.ex.ctx.deps.clock.now());
}

/** The wait before retrying on the same engine, or undefined when its response must pass through. */
function sameEngineDelay(run: AttemptRun, after: number | undefined): number | undefined {
  let delay = run.nextDelay();
  if (after !== undefined) {
    if (after > run.settings().maxBackoffMs || after > run.ex.remainingMs()) return undefined;
    delay = Math.max(delay, after);
  }
  if (delay >= run.ex.remainingMs() || !run.mayRetry()) return undefined;
  return delay;
}

/** Gives back a lease taken for a retry that will not be made. */
async function release(run: AttemptRun, alt: RouteResult | Next): Promise<void> {
  if (!('kind' in alt) && alt.ok) await run.ex.ctx.deps.fleet.settle(alt.lease, { kind: 'aborted' });
}

/** A retryable status: retry elsewhere at once, or on the same engine after a wait, or pass it through. */
async function retryStatus(
  run: AttemptRun,
  a: Answered,
  outcome: AttemptOutcome,
  answer: () => Next,
): Promise<Next> {
  const { res, worker, lease } = a;
  if (!run.withinLimit()) {
    run.mayRetry(); // counts the exhaustion
    return answer();
  }
  const after = engineRetryAfter(run, res);
  const alt = await askFleet(run, worker.id);
  const elsewhere = !('kind' in alt) && alt.ok && alt.worker.id !== worker.id;
  if (elsewhere && run.leg.pinned) {
    await release(run, alt);
    return answer();
  }
  const delay = elsewhere ? (run.mayRetry() ? 0 : undefined) : sameEngineDelay(run, after);
  if (delay === undefined) {
    await release(run, alt);
    return answer();
  }
  discardBody(res.body);
  if (!run.avoid.includes(worker.id)) run.avoid.push(worker.id);
  await run.settle(worker, lease, after === undefined ? outcome : { ...outcome, retryAfterMs: after });
  if ('kind' in alt || !alt.ok) return { kind: 'wait', delay, reason: `status ${res.status}` };
  run.tries++;
  return { kind: 'routed', worker: alt.worker, lease: alt.lease, ...(delay > 0 ? { waitMs: delay } : {}) };
}

/**
 * On the status line, before any byte reaches the client: answer with this response, or retry. A
 * buffered answer is decided at once; a stream waits for its first chunk, a retry for the fleet.
 */
export function decideStep(run: AttemptRun, a: Answered): MaybePromise<Next> {
  const { ctx } = run.ex;
  const { res, worker, lease } = a;
  const outcome = outcomeForStatus(res.status, ctx.classes);
  const retryable = run.buffered && ctx.classes.retryable.has(res.status);
  if (!retryable) {
    if (streamedBody(res.body) && a.firstByteMs === undefined) return firstByteStep(run, a, outcome);
    outcome.firstByteMs = a.firstByteMs ?? ctx.stalls.firstByte(a.tracker); // a fresh outcome: ours to fill
    const result = { kind: 'response' as const, res, worker, lease, outcome };
    return { kind: 'done', result };
  }
  ctx.stalls.end(a.tracker);
  ctx.stalls.progress(worker.id); // it answered: alive, if busy
  // Passed through: its outcome is recorded when the answer ends, as this request's signal.
  const answer = (): Next => ({
    kind: 'done',
    result: { kind: 'response', res, worker, lease, outcome: run.signal(worker.id, outcome) },
  });
  return retryStatus(run, a, outcome, answer);
}
