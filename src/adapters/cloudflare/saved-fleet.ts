/**
 * The fleet state a FleetObject keeps in SQLite across restarts, and how a restored registry meets a
 * changed config (a redeploy): the config's new workers are added, the ones it dropped are removed,
 * and admin changes otherwise survive.
 */
import type { WorkerSpec } from '../../core/contracts/fleet-api.ts';
import type { Fleet, PersistedFleet } from '../../core/fleet/fleet.ts';
import { normalizeWorkerUrl, workerId } from '../../core/fleet/workers.ts';

export interface SavedState {
  fleet: PersistedFleet;
  /** Ids of the workers the config listed when this was saved. */
  configWorkers: string[];
}

export const specId = (spec: WorkerSpec) => workerId(normalizeWorkerUrl(spec.url), spec.dpRank);

/**
 * Restores a saved state into `fleet` and applies the config's current worker list to it.
 * Returns true when workers were added (they need a first probe).
 */
export function restoreSaved(fleet: Fleet, saved: SavedState, wanted: WorkerSpec[]): boolean {
  fleet.restoreState(saved.fleet);
  // A worker that was draining when the state was saved has no lease left to finish it.
  for (const w of fleet.listWorkers()) if (w.draining) fleet.removeWorker(w.id);
  const ids = wanted.map(specId);
  const before = saved.configWorkers;
  if (ids.length === before.length && ids.every((id, i) => id === before[i])) return false;
  for (const id of before) if (!ids.includes(id)) fleet.removeWorker(id);
  let added = false;
  for (const spec of wanted) {
    if (fleet.getWorker(specId(spec))) continue;
    fleet.addWorker(spec);
    added = true;
  }
  return added;
}
