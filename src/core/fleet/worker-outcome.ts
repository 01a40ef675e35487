/**
 * The two moments a worker's record changes with traffic: admitting a request (its breaker's gate,
 * overridden for a worker the ejection limit or panic admitted) and recording how it ended (its
 * breaker and its signals). The fleet calls these; the state moves stay pure (circuit-breaker.ts,
 * worker-signals.ts).
 */
import type { AttemptOutcome } from '../contracts/fleet-api.ts';
import {
  type BreakerGateResult,
  type BreakerSettings,
  type BreakerTransition,
  breakerGate,
  breakerRecord,
} from '../resilience/circuit-breaker.ts';
import { breakerSettingsFor } from './availability.ts';
import { breakerBlocks } from './ejection.ts';
import type { Lease } from './leases.ts';
import { recordSignals, type SignalSettings } from './worker-signals.ts';
import type { WorkerRecord } from './workers.ts';

/**
 * The breaker's word on the chosen worker (its state is updated). A worker chosen while its
 * breaker blocks was admitted by the ejection limit or panic (candidates.ts): it gets a regular
 * request, not a half-open probe, and its breaker keeps its own course.
 */
export function admit(w: WorkerRecord, global: BreakerSettings, now: number): BreakerGateResult {
  if (breakerBlocks(w, global, now)) {
    return { allow: true, probe: false, state: w.breaker, generation: w.breaker.generation };
  }
  const gate = breakerGate(w.breaker, breakerSettingsFor(w, global), now);
  w.breaker = gate.state;
  return gate;
}

export interface Recorded {
  transition?: BreakerTransition;
  /** A new quarantine began (the attempt stalled). */
  quarantined: boolean;
  /** The breaker counts outcomes (it is not disabled). */
  counted: boolean;
}

/** Records a released lease's outcome on its worker: breaker first, then the signals. */
export function recordOutcome(
  lease: Lease,
  outcome: AttemptOutcome,
  now: number,
  global: { breaker: BreakerSettings; signals: SignalSettings },
): Recorded {
  const w = lease.worker;
  const settings = breakerSettingsFor(w, global.breaker);
  const r = breakerRecord(w.breaker, settings, outcome.kind, now, lease.probe, lease.generation);
  w.breaker = r.state;
  const before = w.signals;
  const attempt = {
    now,
    routedAt: lease.routedAt,
    cls: lease.stream ? ('stream' as const) : ('unary' as const),
    quarantineMs: settings.timeoutDurationSecs * 1000,
  };
  w.signals = recordSignals(before, outcome, attempt, global.signals);
  const quarantined = w.signals.quarantinedAt !== before.quarantinedAt;
  return { ...(r.transition ? { transition: r.transition } : {}), quarantined, counted: !settings.disabled };
}
