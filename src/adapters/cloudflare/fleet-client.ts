/**
 * The seam between the isolates and the fleet's Durable Object on Cloudflare Workers: the bindings
 * and config both sides read, the wire shapes they exchange, and `FleetClient`, a `FleetApi` whose
 * every method is one RPC call to the `FleetObject`.
 *
 * - Errors do not keep their class across RPC (only the message survives), so the object answers
 *   the two errors the core tells apart by class with tagged values instead of throwing, and this
 *   client throws the real class again: `WorkerConflictError` (409 in the admin API) and
 *   `RouterError` (a policy refusing a request, e.g. least_loaded without a session id).
 * - `settle` is handed to `waitUntil`: the core does not await the settle that ends a response,
 *   and the runtime may drop work still pending once the response is done.
 * - One object per fleet (`idFromName('fleet')`); `objectName` is the seam that lets a pool (or a
 *   session shard) get its own object later.
 */
import { ConfigError } from '../../core/config/errors.ts';
import { parseRouterConfig, type RouterConfig } from '../../core/config/schema.ts';
import { assertSupported } from '../../core/config/unsupported.ts';
import { RouterError, type RouterErrorCode } from '../../core/errors.ts';
import {
  type AttemptOutcome,
  type FleetApi,
  type FleetSnapshot,
  type ProbeReport,
  type RouteInput,
  type RouteResult,
  WorkerConflictError,
  type WorkerInfo,
  type WorkerPatch,
  type WorkerSpec,
} from '../../core/fleet/fleet-api.ts';
import type { FleetObject } from './fleet-object.ts';

export const DEFAULT_FLEET_OBJECT = 'fleet';

/** The bindings the Worker and its object share (wrangler.toml, secrets). */
export interface FleetEnv {
  /** The router configuration as JSON (the same schema as --config files). */
  ROUTER_CONFIG?: string;
  /** Secret: the bearer sent to engines (`workers.apiKey`, --api-key). */
  ROUTER_API_KEY?: string;
  FLEET: DurableObjectNamespace<FleetObject>;
}

/** The configuration from the bindings, read alike in isolates and the object; throws a ConfigError naming the field. */
export function readRouterConfig(env: Pick<FleetEnv, 'ROUTER_CONFIG' | 'ROUTER_API_KEY'>): RouterConfig {
  let raw: Record<string, unknown> = {};
  if (env.ROUTER_CONFIG !== undefined && env.ROUTER_CONFIG.trim() !== '') {
    try {
      raw = JSON.parse(env.ROUTER_CONFIG) as Record<string, unknown>;
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      throw new ConfigError(`ROUTER_CONFIG: not valid JSON: ${detail}`, { flag: 'ROUTER_CONFIG' });
    }
  }
  if (env.ROUTER_API_KEY) {
    const workers = typeof raw.workers === 'object' && raw.workers !== null ? raw.workers : {};
    raw = { ...raw, workers: { ...workers, apiKey: env.ROUTER_API_KEY } };
  }
  const config = parseRouterConfig(raw);
  assertSupported(config);
  return config;
}

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

/** The part of a Durable Object namespace binding the client uses. */
export interface FleetNamespace {
  idFromName(name: string): DurableObjectId;
  get(id: DurableObjectId): unknown;
}

export interface FleetClientOptions {
  /** Object name; one per fleet today (a pool could get its own later). */
  objectName?: string;
  /** Keeps a promise running after the response is sent (`waitUntil` from cloudflare:workers). */
  waitUntil?: (promise: Promise<unknown>) => void;
  /** Request metrics to ship with a settle, if any are due. */
  takeMetrics?: () => MetricsDelta | undefined;
  /** Told when a settle could not reach the object (its lease then expires on the object's side). */
  onSettleError?: (error: unknown) => void;
}

export class FleetClient implements FleetApi {
  /** Object calls made by this client (benchmarks and tests read it). */
  calls = 0;
  private readonly id: DurableObjectId;

  constructor(
    private readonly namespace: FleetNamespace,
    private readonly options: FleetClientOptions = {},
  ) {
    this.id = namespace.idFromName(options.objectName ?? DEFAULT_FLEET_OBJECT);
  }

  /**
   * One RPC call, through a stub made for it: a stub is an I/O object of the request that made it
   * (workerd refuses to use it from another request), and the app outlives requests. When the
   * object was reset (a restart or a new deploy) the call never ran on the new instance and all
   * the old one held in memory is gone, so it is sent again, once.
   */
  private async call<T>(fn: (stub: FleetRpc) => Promise<T>, retried = false): Promise<T> {
    this.calls++;
    try {
      return await fn(this.namespace.get(this.id) as FleetRpc);
    } catch (err) {
      if (!retried && (err as { durableObjectReset?: unknown }).durableObjectReset === true) {
        return this.call(fn, true);
      }
      throw err;
    }
  }

  async route(input: RouteInput): Promise<RouteResult> {
    let reply: RouteReply;
    try {
      reply = await this.call((s) => s.route(input));
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      throw new RouterError('no_available_workers', `fleet state unavailable: ${detail}`);
    }
    if (!reply.ok && reply.code === 'router_error') {
      const { code, message, param, retryAfterSecs } = reply.error;
      throw new RouterError(code, message, {
        ...(param === undefined ? {} : { param }),
        ...(retryAfterSecs === undefined ? {} : { retryAfterSecs }),
      });
    }
    return reply as RouteResult;
  }

  settle(lease: number, outcome: AttemptOutcome): Promise<boolean> {
    // One microtask later, so the request metrics its caller records right after this call
    // (Exchange.finish) travel with it.
    const done = Promise.resolve()
      .then(() => this.call((s) => s.settle(lease, outcome, this.options.takeMetrics?.())))
      .catch((err: unknown) => {
        this.options.onSettleError?.(err);
        return false;
      });
    this.options.waitUntil?.(done);
    return done;
  }

  listWorkers(): Promise<WorkerInfo[]> {
    return this.call((s) => s.listWorkers());
  }

  getWorker(id: string): Promise<WorkerInfo | undefined> {
    return this.call((s) => s.getWorker(id));
  }

  async addWorker(spec: WorkerSpec): Promise<WorkerInfo> {
    const reply = await this.call((s) => s.addWorker(spec));
    if (!reply.ok) throw new WorkerConflictError(reply.conflict);
    return reply.worker;
  }

  updateWorker(id: string, patch: WorkerPatch): Promise<WorkerInfo | undefined> {
    return this.call((s) => s.updateWorker(id, patch));
  }

  recordProbes(reports: ProbeReport[]): Promise<void> {
    return this.call((s) => s.recordProbes(reports));
  }

  removeWorker(id: string): Promise<boolean> {
    return this.call((s) => s.removeWorker(id));
  }

  setWorkerModels(id: string, models: string[]): Promise<void> {
    return this.call((s) => s.setWorkerModels(id, models));
  }

  finishSession(sessionId: string): Promise<void> {
    return this.call((s) => s.finishSession(sessionId));
  }

  models(): Promise<string[]> {
    return this.call((s) => s.models());
  }

  snapshot(): Promise<FleetSnapshot> {
    return this.call((s) => s.snapshot());
  }

  metricsText(metrics?: MetricsDelta): Promise<string> {
    return this.call((s) => s.metricsText(metrics));
  }
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
