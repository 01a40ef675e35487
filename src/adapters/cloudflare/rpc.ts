/**
 * The wire between the isolates and the fleet's Durable Object: what the object answers over RPC
 * (`FleetRpc`, implemented by FleetObject, called by FleetClient) and the plain-data shapes it
 * exchanges. Errors do not keep their class across RPC (only the message survives), so the object
 * answers the two errors the core tells apart by class with tagged values instead of throwing.
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

/** A RouterError as plain data. */
export interface RouterErrorData {
  code: RouterErrorCode;
  message: string;
  param?: string;
  retryAfterSecs?: number;
}

export type RouteReply = RouteResult | { ok: false; code: 'router_error'; error: RouterErrorData };
export type AddWorkerReply = { ok: true; worker: WorkerInfo } | { ok: false; conflict: string };

/**
 * Request metrics an isolate counted since its last shipment, one entry per metric family:
 * its `# HELP`/`# TYPE` lines and `[series, value]` pairs. Every value (counters, histogram
 * buckets, sums and counts) is additive, so the object merges shipments by adding.
 */
export type MetricsDelta = { name: string; head: string[]; series: [string, number][] }[];

/** What the object answers over RPC (FleetObject implements it). */
export interface FleetRpc {
  route(input: RouteInput): Promise<RouteReply>;
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
  /** Prometheus text: the fleet's metrics and the request metrics isolates shipped. */
  metricsText(metrics?: MetricsDelta): Promise<string>;
}

/** Sums the request metrics isolates ship and renders them (the object keeps one). */
export class MetricsAggregate {
  private readonly families = new Map<string, { head: string[]; series: Map<string, number> }>();

  add(delta: MetricsDelta): void {
    for (const { name, head, series } of delta) {
      let family = this.families.get(name);
      if (!family) {
        family = { head, series: new Map() };
        this.families.set(name, family);
      }
      for (const [key, value] of series) family.series.set(key, (family.series.get(key) ?? 0) + value);
    }
  }

  render(): string {
    const out: string[] = [];
    for (const { head, series } of this.families.values()) {
      out.push(...head);
      for (const [key, value] of series) out.push(`${key} ${value}`);
    }
    return out.length === 0 ? '' : `${out.join('\n')}\n`;
  }
}
