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

import { AttemptRun } from './attempt-run.ts';
import { sendStep } from './attempt-send.ts';
import { decideStep, routeStep } from './attempt-steps.ts';
import type { Exchange } from './exchange.ts';
import type { Leg, LegResult, Next, Routed } from './leg.ts';

export { AttemptRun } from './attempt-run.ts';
export type { Leg, LegResult, Routed } from './leg.ts';

/** The loop's first step, and the one after a transport failure: route (again). */
const ROUTE: Next = { kind: 'again' };

/** A backoff before routing again; the leg's end when the client left or the deadline passed. */
async function waitStep(run: AttemptRun, wait: { delay: number; reason: string }): Promise<Next> {
  return (await run.backOff(wait.delay, wait.reason)) ? ROUTE : { kind: 'done', result: run.stopped() };
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
    // Each step that can answer at once does (routing in memory, deciding on a buffered answer),
    // and is awaited only when it did not: a request waits for nothing but its engine.
    let next: Next = first ?? ROUTE;
    for (;;) {
      if (next.kind === 'done') return next.result;
      if (next.kind !== 'routed') {
        const step = next.kind === 'wait' ? waitStep(run, next) : routeStep(run);
        next = step instanceof Promise ? await step : step;
        continue;
      }
      const sent = await sendStep(run, next);
      const decided = sent.kind === 'sent' ? decideStep(run, sent.answered) : sent;
      next = decided instanceof Promise ? await decided : decided;
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
    const step = routeStep(run);
    let next = step instanceof Promise ? await step : step;
    if (next.kind === 'wait') next = await waitStep(run, next);
    if (next.kind === 'routed') return next;
    if (next.kind === 'done') return next.result;
  }
}
