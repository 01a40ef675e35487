/** The fleet's state as plain JSON, for a Durable Object's storage (leases are not kept). */
import type { WorkerSpec } from '../contracts/fleet-api.ts';
import { createWorkerRecord, type WorkerRecord } from './workers.ts';

export interface PersistedWorker {
  spec: WorkerSpec;
  models: string[] | null;
  modelsStatic: boolean;
  health: WorkerRecord['health'];
  breaker: WorkerRecord['breaker'];
  draining: boolean;
  processed: number;
}

export interface PersistedFleet {
  version: 1;
  workers: PersistedWorker[];
  /** Policy snapshots by pool key. */
  policies: Record<string, unknown>;
}

export function persistWorker(w: WorkerRecord): PersistedWorker {
  const spec: WorkerSpec = { url: w.url, role: w.role };
  if (w.dpRank !== undefined) spec.dpRank = w.dpRank;
  if (w.bootstrapPort !== undefined) spec.bootstrapPort = w.bootstrapPort;
  if (w.priority !== undefined) spec.priority = w.priority;
  if (w.circuitBreaker !== undefined) spec.circuitBreaker = w.circuitBreaker;
  if (w.retry !== undefined) spec.retry = w.retry;
  return {
    spec,
    models: w.models,
    modelsStatic: w.modelsStatic,
    health: w.health,
    breaker: w.breaker,
    draining: w.draining,
    processed: w.processed,
  };
}

/** A worker record from its saved form (breaker, health and counts included). */
export function restoreWorker(saved: PersistedWorker, options: { probing: boolean }): WorkerRecord {
  const record = createWorkerRecord(saved.spec, options);
  record.models = saved.models;
  record.modelsStatic = saved.modelsStatic;
  record.health = saved.health;
  record.breaker = saved.breaker;
  record.draining = saved.draining;
  record.processed = saved.processed;
  return record;
}
