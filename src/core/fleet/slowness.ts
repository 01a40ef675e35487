/**
 * Affinity yields to health: the candidates much slower than the fastest one are dropped before the
 * policy chooses (candidates.ts keeps them when nobody else is left).
 *
 * Per request class, each candidate has a latency estimate (worker-signals.ts) that is fresh (a
 * sample within SLOW_RECHECK_MS, 10 s), stale, or missing. The reference is the lowest of
 *  - the fresh estimates, and
 *  - for an idle candidate (nothing in flight) without a fresh estimate: its stale estimate, or 0
 *    when it was never measured (it might be the fast one: it gets one request to find out).
 * A candidate is slow when its estimate exceeds both the reference × --slow-worker-factor and the
 * reference + --slow-worker-margin-ms. A slow fresh estimate drops it; a slow stale one drops it
 * unless it is idle, so a slow worker is re-measured with one request at a time until a new sample
 * arrives. A candidate never measured is never dropped.
 * The margin keeps ordinary differences among healthy engines (one holds the prompt's prefix in its
 * cache, the other computes it) from counting as slowness.
 */

import { isFresh, type LatencyClass, type SignalSettings } from './worker-signals.ts';
import type { WorkerRecord } from './workers.ts';

function reference(ws: readonly WorkerRecord[], cls: LatencyClass, now: number, s: SignalSettings): number {
  let ref = Number.POSITIVE_INFINITY;
  for (const w of ws) {
    const e = w.signals.latency[cls];
    if (e !== undefined && isFresh(e, now, s)) ref = Math.min(ref, e.ms);
    else if (w.load === 0) ref = Math.min(ref, e?.ms ?? 0);
  }
  return ref;
}

/** The candidates that are not much slower than the fastest (the same array when none is). */
export function withoutSlow(
  ws: readonly WorkerRecord[],
  cls: LatencyClass,
  now: number,
  s: SignalSettings,
): readonly WorkerRecord[] {
  if (s.slowFactor === 0 || ws.length < 2) return ws;
  const ref = reference(ws, cls, now, s);
  if (ref === Number.POSITIVE_INFINITY) return ws;
  const limit = Math.max(ref * s.slowFactor, ref + s.slowMarginMs);
  const keep = (w: WorkerRecord): boolean => {
    const e = w.signals.latency[cls];
    if (e === undefined || e.ms <= limit) return true;
    return !isFresh(e, now, s) && w.load === 0;
  };
  return ws.every(keep) ? ws : ws.filter(keep);
}
