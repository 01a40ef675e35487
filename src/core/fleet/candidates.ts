/**
 * The candidates one routing decision hands to the pool's policy, in an explicit order:
 *
 *   1. hard rules (availability.ts), never relaxed: healthy, not draining, not in `exclude`.
 *      None left: no_available_workers.
 *   2. breakers (ejection.ts): workers their breaker ejects are dropped, within
 *      --cb-max-ejection-percent. None left: panic, every worker of step 1 stays (Envoy: the last
 *      available workers are never ejected; their own answers pass through).
 *   3. soft rules, strongest first; each is skipped when it would leave no candidate:
 *        quarantine  stalled recently (worker-signals.ts)
 *        avoid       answered this request with a retryable or capacity status (`avoid`)
 *        cooldown    Retry-After, or escalating capacity pushback (worker-signals.ts)
 *        slowness    much slower than the fastest candidate of the request's class (slowness.ts)
 *   4. the highest priority tier among what is left.
 *
 * A worker admitted while its breaker blocks (steps 2's limit or panic) is sent a regular request,
 * not a half-open probe (fleet.ts gates it so).
 */
import type { RouteInput } from '../contracts/fleet-api.ts';
import type { BreakerSettings } from '../resilience/circuit-breaker.ts';
import { eligible, keepIf, topTier } from './availability.ts';
import { ejectedWorkers } from './ejection.ts';
import { withoutSlow } from './slowness.ts';
import { isCooling, isQuarantined, type SignalSettings } from './worker-signals.ts';
import type { WorkerRecord } from './workers.ts';

export interface CandidateContext {
  now: number;
  breaker: BreakerSettings;
  signals: SignalSettings;
}

type SoftRule = (
  ws: readonly WorkerRecord[],
  input: RouteInput,
  c: CandidateContext,
) => readonly WorkerRecord[];

/** The soft rules in the order they apply (the names are for the tests and the reader). */
export const SOFT_RULES: readonly (readonly [string, SoftRule])[] = [
  ['quarantine', (ws, _input, c) => keepIf(ws, (w) => !isQuarantined(w.signals, c.now))],
  [
    'avoid',
    (ws, input) => {
      const avoid = input.avoid;
      return avoid === undefined || avoid.length === 0 ? ws : keepIf(ws, (w) => !avoid.includes(w.id));
    },
  ],
  ['cooldown', (ws, _input, c) => keepIf(ws, (w) => !isCooling(w.signals, c.now))],
  [
    'slowness',
    (ws, input, c) => withoutSlow(ws, input.stream === true ? 'stream' : 'unary', c.now, c.signals),
  ],
];

/** The candidates for one routing decision (steps 1-4 above); empty when step 1 leaves none. */
export function chooseCandidates(
  members: readonly WorkerRecord[],
  input: RouteInput,
  c: CandidateContext,
): readonly WorkerRecord[] {
  const exclude = input.exclude;
  const hard = keepIf(members, (w) => eligible(w, exclude));
  if (hard.length === 0) return hard;
  const ejected = ejectedWorkers(members, c.breaker, c.now, c.signals.maxEjectionPercent);
  let ws = ejected.size === 0 ? hard : keepIf(hard, (w) => !ejected.has(w.id));
  if (ws.length === 0) ws = hard; // panic
  for (const [, rule] of SOFT_RULES) {
    const next = rule(ws, input, c);
    if (next.length > 0) ws = next;
  }
  return topTier(ws);
}
