/**
 * The isolates' side of the fleet's Durable Object on Cloudflare Workers: `FleetClient`, a `FleetApi`
 * whose every method is one RPC call to the `FleetObject` (wire shapes in rpc.ts).
 *
 * - The object answers errors as tagged values (rpc.ts); this client throws the real class again: `WorkerConflictError` (409 in the admin API) and
 *   `RouterError` (a policy refusing a request, e.g. least_loaded without a session id).
 * - `settle` is handed to `waitUntil`: the core does not await the settle that ends a response,
 *   and the runtime may drop work still pending once the response is done.
 * - One object per fleet (`idFromName('fleet')`); `objectName` is the seam that lets a pool (or a
 *   session shard) get its own object later.
 * - A request's routing text is sent as its compact form (block hashes): an 8 KB prompt costs the
 *   call 256 characters instead of 8,192, and `cache_aware` in the object matches on it alike.
 */
import { RouterError } from '../../core/contracts/errors.ts';
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
} from '../../core/contracts/fleet-api.ts';
import { compactRoutingText } from '../../core/routing/compact-text.ts';
import { DEFAULT_FLEET_OBJECT, type FleetNamespace } from './bindings.ts';
import type { FleetRpc, MetricsDelta, RouteReply } from './rpc.ts';

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
    // The prompt travels as its block hashes (compact-text.ts): what cache_aware needs, not the text.
    const sent = input.text === undefined ? input : { ...input, text: compactRoutingText(input.text) };
    try {
      reply = await this.call((s) => s.route(sent));
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
