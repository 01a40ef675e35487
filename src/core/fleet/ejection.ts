/**
 * Breakers eject, within limits (Envoy's outlier detection): at most --cb-max-ejection-percent of a
 * pool's workers are ejected by their breakers at once, at least one when the pool has two or more
 * (a pool of one never ejects its worker). Beyond the limit, the ejections that began longest ago
 * are lifted first (a half-open breaker with no free probe slot counts as the oldest: its timeout
 * already passed). A lifted worker stays routable while its breaker blocks; requests sent to it are
 * not half-open probes, so its breaker keeps its own course. The breaker state itself stays pure
 * (resilience/circuit-breaker.ts); only this decision overrides it.
 */
import { type BreakerSettings, breakerAvailable } from '../resilience/circuit-breaker.ts';
import { breakerSettingsFor } from './availability.ts';
import type { WorkerRecord } from './workers.ts';

const NONE: ReadonlySet<string> = new Set();

export function breakerBlocks(w: WorkerRecord, global: BreakerSettings, now: number): boolean {
  return !breakerAvailable(w.breaker, breakerSettingsFor(w, global), now);
}

/** How many of a pool's `size` workers breakers may eject at once. */
export function ejectionLimit(size: number, maxPercent: number): number {
  if (size < 2) return 0;
  return Math.max(1, Math.floor((size * maxPercent) / 100));
}

/** When the worker's ejection began (open: when it opened; half-open: before any open one). */
function ejectedAt(w: WorkerRecord): number {
  return w.breaker.state === 'open' ? (w.breaker.openedAt ?? 0) : Number.NEGATIVE_INFINITY;
}

/**
 * The ids of the pool's workers that their breakers keep out right now, after the limit. Counted
 * over the pool's healthy members (an unhealthy worker is out anyway); the limit is a share of all
 * members.
 */
export function ejectedWorkers(
  members: readonly WorkerRecord[],
  global: BreakerSettings,
  now: number,
  maxPercent: number,
): ReadonlySet<string> {
  let blocked: WorkerRecord[] | undefined;
  for (const w of members) {
    if (!w.health.healthy || !breakerBlocks(w, global, now)) continue;
    if (blocked === undefined) blocked = [];
    blocked.push(w);
  }
  if (blocked === undefined) return NONE;
  const limit = ejectionLimit(members.length, maxPercent);
  if (blocked.length > limit) {
    // Most recent first; those past the limit (the oldest ejections) are lifted.
    blocked.sort((a, b) => {
      const x = ejectedAt(a);
      const y = ejectedAt(b);
      return x === y ? 0 : x < y ? 1 : -1;
    });
    blocked.length = limit;
  }
  return new Set(blocked.map((w) => w.id));
}
