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

export type { Leg, LegResult, Routed } from './attempt-run.ts';
export { AttemptRun } from './attempt-run.ts';

/** One attempt: route (unless the previous step already did), send, decide. */
async function attemptOnce(run: AttemptRun, carried: Routed | undefined): Promise<Next> {
  const routed = carried ?? (await routeStep(run));
  if (routed.kind !== 'routed') return routed;
  if (routed.waitMs !== undefined && !(await run.backOff(routed.waitMs, 'engine asked to wait'))) {
    await run.ex.ctx.deps.fleet.settle(routed.lease, { kind: 'aborted' });
    return { kind: 'done', result: run.stopped() };
  }
  if (run.off || (run.leg.admits && !run.leg.admits(routed.worker))) {
    await run.ex.ctx.deps.fleet.settle(routed.lease, { kind: 'aborted' });
    return { kind: 'done', result: { kind: 'withdrawn', worker: routed.worker } };
  }
  const sent = await sendStep(run, routed.worker, routed.lease);
  if (sent.kind !== 'sent') return sent;
  return decideStep(run, sent.answered);
}

/**
 * Runs one leg to its result. `run` may be made by the caller (to call the leg off from outside);
 * `first` is a worker already routed for the leg's first attempt (P2P-NCCL picks the decode first).
 */
export async function runAttempts(
  ex: Exchange,
  leg: Leg,
  run = new AttemptRun(ex, leg),
  first?: Routed,
): Promise<LegResult> {
  try {
    let carried: Routed | undefined = first;
    for (;;) {
      const next = await attemptOnce(run, carried);
      carried = undefined;
      if (next.kind === 'done') return next.result;
      if (next.kind === 'routed') carried = next;
      else if (next.kind === 'wait' && !(await run.backOff(next.delay, next.reason))) return run.stopped();
    }
  } finally {
    run.finished = true;
  }
}

/**
 * Routes a leg's first attempt without sending it (waiting out backoffs like the loop does), for
 * plans that must know a worker before the leg is sent: P2P-NCCL names the decode engine in the
 * prefill's request id; Mooncake's concurrent decode names the prefill engine.
 */
export async function routeFirst(run: AttemptRun): Promise<Routed | LegResult> {
  for (;;) {
    const next = await routeStep(run);
    if (next.kind === 'routed' || next.kind === 'done') return next.kind === 'done' ? next.result : next;
    if (next.kind === 'wait' && !(await run.backOff(next.delay, next.reason))) return run.stopped();
  }
}
