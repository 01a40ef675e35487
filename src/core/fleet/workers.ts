/** Worker records: identity, URL normalisation, per-worker state (health, breaker, overrides). */

import type {
  WorkerInfo,
  WorkerOverrides,
  WorkerPatch,
  WorkerRole,
  WorkerSource,
  WorkerSpec,
} from '../contracts/fleet-api.ts';
import type { BreakerState } from '../resilience/circuit-breaker.ts';
import { initialBreaker } from '../resilience/circuit-breaker.ts';
import { type HealthState, initialHealth } from './health-state.ts';
import { initialSignals, type WorkerSignals } from './worker-signals.ts';

export interface WorkerRecord extends WorkerOverrides {
  readonly id: string;
  readonly url: string;
  readonly role: WorkerRole;
  readonly dpRank?: number;
  readonly bootstrapPort?: number | null;
  readonly source?: WorkerSource;
  /** Discovery holds new requests off it (see WorkerPatch.suspended). */
  suspended: boolean;
  models: string[] | null;
  /** Models were given by the operator (flags, admin API), not read from the engine. */
  modelsStatic: boolean;
  health: HealthState;
  breaker: BreakerState;
  /** Cooldown, quarantine and latency estimates from its recent answers (worker-signals.ts). */
  signals: WorkerSignals;
  draining: boolean;
  /** Requests in flight: this router's leases, plus other replicas' (a shared store) when known. */
  load: number;
  /** Requests in flight on this router (its leases held). */
  ownLoad: number;
  /** Requests routed here since it joined. */
  processed: number;
}

/** Trims trailing slashes; rejects anything that is not an absolute http(s) URL. */
export function normalizeWorkerUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`invalid worker URL ${JSON.stringify(raw)}: expected http(s)://host:port`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`invalid worker URL ${JSON.stringify(raw)}: only http and https are supported`);
  }
  return raw.replace(/\/+$/, '');
}

/** A worker's id: its URL, with `@rank` for data-parallel ranks. */
export function workerId(url: string, dpRank?: number): string {
  return dpRank === undefined ? url : `${url}@${dpRank}`;
}

/** `--intra-node-data-parallel-size N`: one spec per rank (`url@0` .. `url@N-1`); N = 1 leaves it alone. */
export function expandDataParallel(spec: WorkerSpec, dpSize: number): WorkerSpec[] {
  if (dpSize <= 1 || spec.dpRank !== undefined) return [spec];
  return Array.from({ length: dpSize }, (_, dpRank) => ({ ...spec, dpRank }));
}

export function createWorkerRecord(spec: WorkerSpec, options: { probing: boolean }): WorkerRecord {
  const url = normalizeWorkerUrl(spec.url);
  const models = spec.models && spec.models.length > 0 ? [...spec.models] : null;
  return {
    id: workerId(url, spec.dpRank),
    url,
    role: spec.role ?? 'regular',
    ...(spec.dpRank === undefined ? {} : { dpRank: spec.dpRank }),
    ...(spec.bootstrapPort === undefined ? {} : { bootstrapPort: spec.bootstrapPort }),
    ...(spec.source === undefined ? {} : { source: { ...spec.source } }),
    suspended: spec.suspended === true,
    ...(spec.priority === undefined ? {} : { priority: spec.priority }),
    ...(spec.circuitBreaker === undefined ? {} : { circuitBreaker: { ...spec.circuitBreaker } }),
    ...(spec.retry === undefined ? {} : { retry: { ...spec.retry } }),
    models,
    modelsStatic: models !== null,
    health: initialHealth(options.probing),
    breaker: initialBreaker(),
    signals: initialSignals(),
    draining: false,
    load: 0,
    ownLoad: 0,
    processed: 0,
  };
}

export function workerInfo(w: WorkerRecord): WorkerInfo {
  return {
    id: w.id,
    url: w.url,
    role: w.role,
    models: w.models ? [...w.models] : null,
    ...(w.dpRank === undefined ? {} : { dpRank: w.dpRank }),
    ...(w.bootstrapPort === undefined ? {} : { bootstrapPort: w.bootstrapPort }),
    ...(w.source === undefined ? {} : { source: { ...w.source } }),
    healthy: w.health.healthy,
    draining: w.draining,
    ...(w.suspended ? { suspended: true } : {}),
    circuit: w.breaker.state,
    load: w.load,
    processed: w.processed,
    ...(w.priority === undefined ? {} : { priority: w.priority }),
    ...(w.circuitBreaker === undefined ? {} : { circuitBreaker: { ...w.circuitBreaker } }),
    ...(w.retry === undefined ? {} : { retry: { ...w.retry } }),
  };
}

export function servesModel(w: WorkerRecord, model: string | undefined): boolean {
  return model === undefined || w.models === null || w.models.includes(model);
}

/** Applies an admin change to a record (`null` clears an override). True when its models changed. */
export function applyWorkerPatch(w: WorkerRecord, patch: WorkerPatch): boolean {
  if (patch.suspended !== undefined) w.suspended = patch.suspended;
  if (patch.priority !== undefined) {
    if (patch.priority === null) delete w.priority;
    else w.priority = patch.priority;
  }
  if (patch.circuitBreaker !== undefined) {
    if (patch.circuitBreaker === null) delete w.circuitBreaker;
    else w.circuitBreaker = { ...w.circuitBreaker, ...patch.circuitBreaker };
  }
  if (patch.retry !== undefined) {
    if (patch.retry === null) delete w.retry;
    else w.retry = { ...w.retry, ...patch.retry };
  }
  if (patch.models === undefined) return false;
  w.models = patch.models && patch.models.length > 0 ? [...patch.models] : null;
  w.modelsStatic = w.models !== null;
  return true;
}
