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

import { AttemptRun, type Leg, type LegResult, type Next } from './attempt-run.ts';
import { decideStep, routeStep, sendStep } from './attempt-steps.ts';
import type { Exchange } from './exchange.ts';

export type { Leg, LegResult } from './attempt-run.ts';

/** One attempt: route, send, decide. */
async function attemptOnce(run: AttemptRun): Promise<Next> {
  const routed = await routeStep(run);
  if (routed.kind !== 'routed') return routed;
  const sent = await sendStep(run, routed.worker, routed.lease);
  if (sent.kind !== 'sent') return sent;
  return decideStep(run, { worker: routed.worker, lease: routed.lease, res: sent.res });
}

export async function runAttempts(ex: Exchange, leg: Leg): Promise<LegResult> {
  const run = new AttemptRun(ex, leg);
  for (;;) {
    const next = await attemptOnce(run);
    if (next.kind === 'done') return next.result;
    if (next.kind === 'wait' && !(await run.backOff(next.delay, next.reason))) return run.stopped();
  }
}
