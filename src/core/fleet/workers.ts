/** Worker records: identity, URL normalisation and the mutable per-worker counters. */
import type { WorkerInfo, WorkerRole, WorkerSpec } from './fleet-api.ts';

export interface WorkerRecord {
  readonly id: string;
  readonly url: string;
  readonly role: WorkerRole;
  readonly dpRank?: number;
  readonly bootstrapPort?: number | null;
  models: string[] | null;
  healthy: boolean;
  draining: boolean;
  /** Requests in flight (leases held). */
  load: number;
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

export function createWorkerRecord(spec: WorkerSpec): WorkerRecord {
  const url = normalizeWorkerUrl(spec.url);
  return {
    id: workerId(url, spec.dpRank),
    url,
    role: spec.role ?? 'regular',
    ...(spec.dpRank === undefined ? {} : { dpRank: spec.dpRank }),
    ...(spec.bootstrapPort === undefined ? {} : { bootstrapPort: spec.bootstrapPort }),
    models: spec.models && spec.models.length > 0 ? [...spec.models] : null,
    healthy: true,
    draining: false,
    load: 0,
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
    healthy: w.healthy,
    draining: w.draining,
    load: w.load,
    processed: w.processed,
  };
}

export function servesModel(w: WorkerRecord, model: string | undefined): boolean {
  return model === undefined || w.models === null || w.models.includes(model);
}
