/** Applies a health-probe round to the workers: their health state, and the models they listed. */
import type { ProbeReport } from '../contracts/fleet-api.ts';
import { type HealthSettings, recordProbe } from './health-state.ts';
import type { WorkerRecord } from './workers.ts';

/**
 * Records each report on the workers at its URL (every DP rank behind it); `flipped` is told of
 * every worker whose verdict changed. Returns true when some worker's models changed (the pools
 * must be rebuilt).
 */
export function applyProbes(
  workers: Iterable<WorkerRecord>,
  reports: readonly ProbeReport[],
  settings: HealthSettings,
  now: number,
  flipped: (w: WorkerRecord, healthy: boolean, error: string | undefined) => void,
): boolean {
  const byUrl = new Map(reports.map((r) => [r.url, r]));
  let modelsChanged = false;
  for (const w of workers) {
    const report = byUrl.get(w.url);
    if (!report) continue;
    const r = recordProbe(w.health, settings, report.ok, now, report.error);
    w.health = r.state;
    if (r.changed) flipped(w, r.state.healthy, report.error);
    const models = report.models;
    if (models && models.length > 0 && !w.modelsStatic && !sameList(w.models, models)) {
      w.models = [...models];
      modelsChanged = true;
    }
  }
  return modelsChanged;
}

function sameList(a: string[] | null, b: string[]): boolean {
  return a !== null && a.length === b.length && a.every((x, i) => x === b[i]);
}
