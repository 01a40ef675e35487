/**
 * The attempt loop (retries), as small steps over one state object: route → send → decide → back
 * off (attempt-steps.ts holds the first three). A request runs it once per leg (a regular request
 * has one leg; a prefill/decode request will run a prefill leg, then a decode leg, on the same
 * exchange). The decision is made on the status line, before any byte reaches the client. A
 * retryable status keeps the worker a candidate and retries after a backoff (so a single engine
 * still benefits); a transport failure excludes the worker and reroutes at once, backing off only
 * when every candidate is excluded (then the exclusions reset). Retries stop at the attempt limit,
 * at the request deadline, when `Retry-After` asks for too long, or when the retry budget is spent;
 * the last engine response then passes through as the engine sent it.
 */

import { AttemptRun, type Leg, type LegResult, type Next, type Routed } from './attempt-run.ts';
import { sendStep } from './attempt-send.ts';
import { decideStep, routeStep } from './attempt-steps.ts';
import type { Exchange } from './exchange.ts';

export type { Leg, LegResult } from './attempt-run.ts';

/** One attempt: route (unless the previous step already did), send, decide. */
async function attemptOnce(run: AttemptRun, carried: Routed | undefined): Promise<Next> {
  const routed = carried ?? (await routeStep(run));
  if (routed.kind !== 'routed') return routed;
  if (routed.waitMs !== undefined && !(await run.backOff(routed.waitMs, 'engine asked to wait'))) {
    await run.ex.ctx.deps.fleet.settle(routed.lease, { kind: 'aborted' });
    return { kind: 'done', result: run.stopped() };
  }
  const sent = await sendStep(run, routed.worker, routed.lease);
  if (sent.kind !== 'sent') return sent;
  return decideStep(run, sent.answered);
}

export async function runAttempts(ex: Exchange, leg: Leg): Promise<LegResult> {
  const run = new AttemptRun(ex, leg);
  let carried: Routed | undefined;
  for (;;) {
    const next = await attemptOnce(run, carried);
    carried = undefined;
    if (next.kind === 'done') return next.result;
    if (next.kind === 'routed') carried = next;
    else if (next.kind === 'wait' && !(await run.backOff(next.delay, next.reason))) return run.stopped();
  }
}
