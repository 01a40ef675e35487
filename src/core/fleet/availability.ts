/**
 * The hard rules of eligibility, which never fall back: a worker must be healthy, not draining, not
 * suspended (a discovered pod that is not Ready) and not excluded by the request; and the priority tiers (traffic goes to the highest tier left).
 * candidates.ts applies them together with the breakers and the soft rules.
 */
import type { BreakerSettings } from '../resilience/circuit-breaker.ts';
import type { WorkerRecord } from './workers.ts';

export function breakerSettingsFor(w: WorkerRecord, global: BreakerSettings): BreakerSettings {
  return w.circuitBreaker === undefined ? global : { ...global, ...w.circuitBreaker };
}

/** Healthy, not draining, not suspended by discovery, not excluded by this request. */
export function eligible(w: WorkerRecord, exclude: readonly string[] | undefined): boolean {
  return w.health.healthy && !w.draining && !w.suspended && !(exclude?.includes(w.id) ?? false);
}

/** The workers that pass `keep`: the same array when all do (no copy on the common path). */
export function keepIf(
  ws: readonly WorkerRecord[],
  keep: (w: WorkerRecord) => boolean,
): readonly WorkerRecord[] {
  return ws.every(keep) ? ws : ws.filter(keep);
}

/** The workers of the highest priority tier among `ws` (unset priority = 0). */
export function topTier(ws: readonly WorkerRecord[]): readonly WorkerRecord[] {
  let top = Number.NEGATIVE_INFINITY;
  let tiered = false;
  for (const w of ws) {
    if (w.priority !== undefined) tiered = true;
    top = Math.max(top, w.priority ?? 0);
  }
  return tiered ? keepIf(ws, (w) => (w.priority ?? 0) === top) : ws;
}
