/**
 * What the main object's listings (/workers, /get_loads, /readiness) add from its pool objects:
 * each worker's load and processed count of the pools' requests, and the workers removed while a
 * pool object still holds leases on them, listed as draining until those end (as a removal drains
 * on Node and Deno; the pool objects drain them, the main object holds no lease on them).
 */
import type { WorkerInfo } from '../../core/contracts/fleet-api.ts';
import type { PoolDirectory } from './pool-directory.ts';
import type { WorkerLoads } from './rpc.ts';

export class PoolLoads {
  /** Removed here, maybe still leased in a pool: as they were listed, by id. */
  private readonly removed = new Map<string, WorkerInfo>();

  constructor(private readonly pools: PoolDirectory) {}

  /** A worker the main object forgot (it held no lease on it): the pools may still drain it. */
  forgotten(worker: WorkerInfo): void {
    this.removed.set(worker.id, { ...worker, draining: true, load: 0 });
  }

  /** A worker added (again): listed as the main object has it. */
  added(id: string): void {
    this.removed.delete(id);
  }

  /** `workers` with the pools' loads added, and the removed ones pools still drain (only `id`'s, with `id`). */
  async add(workers: WorkerInfo[], id?: string): Promise<WorkerInfo[]> {
    const loads = await this.pools.each('loads', (p) => p.loads());
    const removed = [...this.removed.values()].filter((w) => id === undefined || w.id === id);
    const listed = withPoolLoads([...workers, ...removed.map((w) => ({ ...w }))], loads);
    return listed.filter((w) => {
      if (!this.removed.has(w.id) || w.load > 0) return true;
      this.removed.delete(w.id); // drained everywhere
      return false;
    });
  }
}

/** Workers with the load and processed counts of the pool objects' requests added. */
function withPoolLoads(workers: WorkerInfo[], loads: readonly WorkerLoads[]): WorkerInfo[] {
  for (const w of workers) {
    for (const pool of loads) {
      const l = pool[w.id];
      if (l === undefined) continue;
      w.load += l.load;
      w.processed += l.processed;
    }
  }
  return workers;
}
