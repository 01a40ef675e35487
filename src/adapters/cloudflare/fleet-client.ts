/**
 * The isolates' side of the fleet's Durable Objects on Cloudflare Workers: `FleetClient`, a
 * `FleetApi` whose every method is one RPC call (wire shapes in rpc.ts).
 *
 * - Sharding: a request whose model has a pool object goes to that object (`FLEET_POOLS`,
 *   `idFromName('fleet/pool:<model>')`, pool-object.ts); the rest, and every admin, listing and
 *   session call, go to the main object (`idFromName('fleet')`, fleet-object.ts). Which models
 *   have a pool is learnt from route answers (shard-map.ts): each call says which registry version
 *   the isolate knows, and an object that knows a newer one answers with it. Until then the main
 *   object passes a pooled request on to its pool. Still one `route` and one `settle` per attempt:
 *   the settle goes to the object that granted the lease (the core sees the isolate's own numbers).
 * - The objects answer errors as tagged values (rpc.ts); this client throws the real class again:
 *   `WorkerConflictError` (409 in the admin API) and `RouterError` (a policy refusing a request,
 *   e.g. least_loaded without a session id).
 * - `settle` is handed to `waitUntil`: the core does not await the settle that ends a response,
 *   and the runtime may drop work still pending once the response is done.
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
import { compactRoutingText } from '../../core/policies/compact-text.ts';
import { DEFAULT_FLEET_OBJECT, type FleetNamespace, poolObjectName } from './bindings.ts';
import type { FleetRpc, MetricsDelta, PoolRpc, RouteReply } from './rpc.ts';
import { ShardMap } from './shard-map.ts';

export interface FleetClientOptions {
  /** The main object's name (default `fleet`); its pools' objects are named after it. */
  objectName?: string;
  /** The pool objects' namespace (`FLEET_POOLS`); without it every call goes to the main object. */
  pools?: FleetNamespace;
  /** How long a lease the core never settled is remembered (default: an hour). */
  leaseTtlMs?: number;
  /** Keeps a promise running after the response is sent (`waitUntil` from cloudflare:workers). */
  waitUntil?: (promise: Promise<unknown>) => void;
  /** Request metrics to ship with a settle, if any are due. */
  takeMetrics?: () => MetricsDelta | undefined;
  /** Told when a settle could not reach the object (its lease then expires on the object's side). */
  onSettleError?: (error: unknown) => void;
}

/** One object: its name, namespace and id. */
interface Target {
  name: string;
  namespace: FleetNamespace;
  id: DurableObjectId;
}

export class FleetClient implements FleetApi {
  /** Object calls made by this client (benchmarks and tests read it). */
  calls = 0;
  private readonly main: Target;
  private readonly pools = new Map<string, Target>();
  private readonly shards: ShardMap<Target>;

  constructor(
    namespace: FleetNamespace,
    private readonly options: FleetClientOptions = {},
  ) {
    const name = options.objectName ?? DEFAULT_FLEET_OBJECT;
    this.main = { name, namespace, id: namespace.idFromName(name) };
    this.shards = new ShardMap(options.leaseTtlMs ?? 3_600_000);
  }

  /** The pool object named `name` (from a route answer's `shard`, or built from a model). */
  private pool(name: string, namespace: FleetNamespace): Target {
    let target = this.pools.get(name);
    if (!target) {
      target = { name, namespace, id: namespace.idFromName(name) };
      this.pools.set(name, target);
    }
    return target;
  }

  /**
   * One RPC call, through a stub made for it: a stub is an I/O object of the request that made it
   * (workerd refuses to use it from another request), and the app outlives requests. When the
   * object was reset (a restart or a new deploy) the call never ran on the new instance and all
   * the old one held in memory is gone, so it is sent again, once.
   */
  private async call<S, T>(target: Target, fn: (stub: S) => Promise<T>, retried = false): Promise<T> {
    this.calls++;
    try {
      return await fn(target.namespace.get(target.id) as S);
    } catch (err) {
      if (!retried && (err as { durableObjectReset?: unknown }).durableObjectReset === true) {
        return this.call(target, fn, true);
      }
      throw err;
    }
  }

  private callMain<T>(fn: (stub: FleetRpc) => Promise<T>): Promise<T> {
    return this.call(this.main, fn);
  }

  async route(input: RouteInput): Promise<RouteResult> {
    const pools = this.options.pools;
    const model = input.model;
    const target =
      pools && model !== undefined && this.shards.hasPool(model)
        ? this.pool(poolObjectName(this.main.name, model), pools)
        : this.main;
    // Without a pool namespace the main object must not pass requests on: no version is sent.
    const known = pools ? this.shards.version : undefined;
    // The prompt travels as its block hashes (compact-text.ts): what cache_aware needs, not the text.
    const sent = input.text === undefined ? input : { ...input, text: compactRoutingText(input.text) };
    let reply: RouteReply;
    try {
      reply = await this.call(target, (s: FleetRpc | PoolRpc) => s.route(sent, known));
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      throw new RouterError('no_available_workers', `fleet state unavailable: ${detail}`);
    }
    this.shards.learn(reply.news);
    if (!reply.ok) {
      if (reply.code !== 'router_error') return { ok: false, code: reply.code, models: reply.models };
      const { code, message, param, retryAfterSecs } = reply.error;
      throw new RouterError(code, message, {
        ...(param === undefined ? {} : { param }),
        ...(retryAfterSecs === undefined ? {} : { retryAfterSecs }),
      });
    }
    const granter = reply.shard !== undefined && pools ? this.pool(reply.shard, pools) : target;
    return { ok: true, worker: reply.worker, lease: this.shards.grant(granter, reply.lease) };
  }

  settle(lease: number, outcome: AttemptOutcome): Promise<boolean> {
    const granted = this.shards.take(lease);
    if (!granted) return Promise.resolve(false);
    // One microtask later, so the request metrics its caller records right after this call
    // (Exchange.finish) travel with it.
    const done = Promise.resolve()
      .then(() =>
        this.call(granted.target, (s: FleetRpc | PoolRpc) =>
          s.settle(granted.lease, outcome, this.options.takeMetrics?.()),
        ),
      )
      .catch((err: unknown) => {
        this.options.onSettleError?.(err);
        return false;
      });
    this.options.waitUntil?.(done);
    return done;
  }

  /** Leases granted and not settled yet (tests read it). */
  get leasesHeld(): number {
    return this.shards.held;
  }

  listWorkers(): Promise<WorkerInfo[]> {
    return this.callMain((s) => s.listWorkers());
  }

  getWorker(id: string): Promise<WorkerInfo | undefined> {
    return this.callMain((s) => s.getWorker(id));
  }

  async addWorker(spec: WorkerSpec): Promise<WorkerInfo> {
    const reply = await this.callMain((s) => s.addWorker(spec));
    if (!reply.ok) throw new WorkerConflictError(reply.conflict);
    return reply.worker;
  }

  updateWorker(id: string, patch: WorkerPatch): Promise<WorkerInfo | undefined> {
    return this.callMain((s) => s.updateWorker(id, patch));
  }

  recordProbes(reports: ProbeReport[]): Promise<void> {
    return this.callMain((s) => s.recordProbes(reports));
  }

  removeWorker(id: string): Promise<boolean> {
    return this.callMain((s) => s.removeWorker(id));
  }

  setWorkerModels(id: string, models: string[]): Promise<void> {
    return this.callMain((s) => s.setWorkerModels(id, models));
  }

  /** The main object forgets the session in its pools and in every pool object. */
  finishSession(sessionId: string): Promise<void> {
    return this.callMain((s) => s.finishSession(sessionId));
  }

  models(): Promise<string[]> {
    return this.callMain((s) => s.models());
  }

  snapshot(): Promise<FleetSnapshot> {
    return this.callMain((s) => s.snapshot());
  }

  metricsText(metrics?: MetricsDelta): Promise<string> {
    return this.callMain((s) => s.metricsText(metrics));
  }
}
