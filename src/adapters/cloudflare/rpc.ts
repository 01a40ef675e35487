/**
 * The wire between the isolates and the fleet's Durable Objects: what the main object answers over
 * RPC (`FleetRpc`, implemented by FleetObject), what a model pool's object answers (`PoolRpc`,
 * PoolObject), both called by FleetClient, and the plain-data shapes they exchange. Errors do not
 * keep their class across RPC (only the message survives), so the objects answer the two errors
 * the core tells apart by class with tagged values instead of throwing.
 */

import type { RouterErrorCode } from '../../core/contracts/errors.ts';
import type {
  AttemptOutcome,
  FleetSnapshot,
  ProbeReport,
  RouteInput,
  RouteResult,
  WorkerInfo,
  WorkerPatch,
  WorkerSpec,
} from '../../core/contracts/fleet-api.ts';
import type { WorkerView } from '../../core/fleet/registry-view.ts';

/** A RouterError as plain data. */
export interface RouterErrorData {
  code: RouterErrorCode;
  message: string;
  param?: string;
  retryAfterSecs?: number;
}

/**
 * A route answer. `shard`: the object that granted the lease, when it is not the one called (the
 * main object passed the request on to the pool's object); the settle goes there. `news`: the
 * registry version the answering object follows and the models that have a pool object, when the
 * caller's version (the `known` argument) is older.
 */
export type RouteReply = (RouteResult | { ok: false; code: 'router_error'; error: RouterErrorData }) & {
  shard?: string;
  news?: RegistryNews;
};

export interface RegistryNews {
  version: number;
  models: string[];
}

/** The main object's registry as the pool objects follow it; `version` moves with every change. */
export interface RegistrySnapshot {
  version: number;
  workers: WorkerView[];
}

/** A breaker a pool object saw open (`open`) or close again; the main object takes its word. */
export interface CircuitReport {
  id: string;
  open: boolean;
}

/** A pool object's load and processed count of each worker (its own requests only). */
export type WorkerLoads = Record<string, { load: number; processed: number }>;
export type AddWorkerReply = { ok: true; worker: WorkerInfo } | { ok: false; conflict: string };

/**
 * Request metrics an isolate counted since its last shipment, one entry per metric family:
 * its `# HELP`/`# TYPE` lines and `[series, value]` pairs. Every value (counters, histogram
 * buckets, sums and counts) is additive, so the object merges shipments by adding.
 */
export type MetricsDelta = { name: string; head: string[]; series: [string, number][] }[];

/** What the main object answers over RPC (FleetObject implements it). */
export interface FleetRpc {
  /** `known`: the registry version the caller follows; a caller without it is never passed on to a pool. */
  route(input: RouteInput, known?: number): Promise<RouteReply>;
  settle(lease: number, outcome: AttemptOutcome, metrics?: MetricsDelta): Promise<boolean>;
  listWorkers(): Promise<WorkerInfo[]>;
  getWorker(id: string): Promise<WorkerInfo | undefined>;
  addWorker(spec: WorkerSpec): Promise<AddWorkerReply>;
  updateWorker(id: string, patch: WorkerPatch): Promise<WorkerInfo | undefined>;
  recordProbes(reports: ProbeReport[]): Promise<void>;
  removeWorker(id: string): Promise<boolean>;
  setWorkerModels(id: string, models: string[]): Promise<void>;
  finishSession(sessionId: string): Promise<void>;
  models(): Promise<string[]>;
  snapshot(): Promise<FleetSnapshot>;
  /** Prometheus text: the fleet's metrics and the request metrics isolates shipped, pools' included. */
  metricsText(metrics?: MetricsDelta): Promise<string>;
  /** A pool object (its name) pulls the registry, and is pushed every new version from then on. */
  registry(pool: string): Promise<RegistrySnapshot>;
  reportCircuits(reports: CircuitReport[]): Promise<void>;
}

/** The objects as their namespaces type them, without the classes (no import cycle). */
export type FleetObjectRpc = FleetRpc & Rpc.DurableObjectBranded;
export type PoolObjectRpc = PoolRpc & Rpc.DurableObjectBranded;

/** What a model pool's object answers over RPC (PoolObject implements it). */
export interface PoolRpc {
  route(input: RouteInput, known?: number): Promise<RouteReply>;
  settle(lease: number, outcome: AttemptOutcome, metrics?: MetricsDelta): Promise<boolean>;
  /** The main object pushes a new registry version. */
  follow(snapshot: RegistrySnapshot): Promise<void>;
  finishSession(sessionId: string): Promise<void>;
  loads(): Promise<WorkerLoads>;
  /** Its own metrics and the request metrics isolates shipped with their settles. */
  metricsText(): Promise<string>;
}
