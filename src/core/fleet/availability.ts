/**
 * Which workers may take a request now: healthy, not draining, breaker admitting, and in the
 * highest priority tier that has such a worker.
 */
import { type BreakerSettings, breakerAvailable } from '../resilience/circuit-breaker.ts';
import type { WorkerRecord } from './workers.ts';

export function breakerSettingsFor(w: WorkerRecord, global: BreakerSettings): BreakerSettings {
  return w.circuitBreaker === undefined ? global : { ...global, ...w.circuitBreaker };
}

function usable(
  w: WorkerRecord,
  exclude: readonly string[] | undefined,
  now: number,
  global: BreakerSettings,
) {
  return (
    w.health.healthy &&
    !w.draining &&
    !(exclude?.includes(w.id) ?? false) &&
    breakerAvailable(w.breaker, breakerSettingsFor(w, global), now)
  );
}

/** The candidates for one routing decision (the members array itself when nothing is filtered). */
export function availableCandidates(
  members: WorkerRecord[],
  exclude: readonly string[] | undefined,
  now: number,
  global: BreakerSettings,
): WorkerRecord[] {
  let all = true;
  let tiered = false;
  for (const w of members) {
    if (w.priority !== undefined) tiered = true;
    if (!usable(w, exclude, now, global)) all = false;
  }
  const candidates = all ? members : members.filter((w) => usable(w, exclude, now, global));
  if (!tiered || candidates.length === 0) return candidates;
  let top = Number.NEGATIVE_INFINITY;
  for (const w of candidates) top = Math.max(top, w.priority ?? 0);
  return candidates.filter((w) => (w.priority ?? 0) === top);
}
