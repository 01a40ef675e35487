/**
 * FleetObject: the fleet's main Durable Object on Cloudflare Workers (`idFromName('fleet')`), the
 * source of truth for the worker registry, admin changes, health probes and what survives restarts.
 * Requests for a model some worker lists are routed by that model's pool object (pool-object.ts,
 * `idFromName('fleet/pool:<model>')`), so the ~1,000 calls/s Cloudflare allows one object apply per
 * model; this object routes requests without a model or for a model no worker lists. Isolates call
 * both by RPC (fleet-client.ts) and stream the engines' bytes themselves.
 *
 * - Registry: every change (admin call, probe round, breaker or health flip, a breaker a pool
 *   reported) gets a new version (this start's epoch × 2^32 + a counter), pushed to every pool
 *   object that pulled it (pool-directory.ts). Admin calls answer once the pools have it.
 * - Routing calls from an isolate that does not know a model's pool yet are passed on to it: the
 *   answer names the pool (`shard`, where the settle goes) and carries the registry news.
 * - Listings (/workers, /get_loads, /readiness) add the pool objects' loads and processed counts;
 *   /metrics adds their pages; finishing a session reaches every pool.
 * - Persistence: `Fleet.exportState()` (registry, health, breakers, policy snapshots) in SQLite, at
 *   once after admin changes, probe rounds and breaker or health flips, otherwise within
 *   SOFT_FLUSH_MS; restored at start inside `blockConcurrencyWhile`; policy trees rebuild. A config
 *   whose worker list changed since the state was saved (a redeploy) adds the new config workers
 *   and removes the dropped ones; admin changes otherwise survive restarts.
 * - The alarm runs the health tick every --health-check-interval-secs (and reclaims expired leases).
 */
import type { FleetSnapshot, RouteInput } from '../../core/contracts/fleet-api.ts';
import {
  type ProbeReport,
  WorkerConflictError,
  type WorkerInfo,
  type WorkerPatch,
  type WorkerSpec,
} from '../../core/contracts/fleet-api.ts';
import { workerSpecsFromConfig } from '../../core/fleet/from-config.ts';
import { poolObjectName } from './bindings.ts';
import { sumMetricsTexts } from './metrics-sum.ts';
import { FleetObjectBase, LEASE_SPAN } from './object-base.ts';
import { PoolDirectory } from './pool-directory.ts';
import { PoolLoads } from './pool-loads.ts';
import type {
  AddWorkerReply,
  CircuitReport,
  FleetRpc,
  MetricsDelta,
  RegistrySnapshot,
  RouteReply,
} from './rpc.ts';
import { restoreSaved, type SavedState, specId } from './saved-fleet.ts';

export { type FleetEnv, SOFT_FLUSH_MS } from './object-base.ts';

const STARTUP_PROBE_WAIT_MS = 5_000;

export class FleetObject extends FleetObjectBase implements FleetRpc {
  private pools: PoolDirectory | undefined;
  private poolLoads: PoolLoads | undefined;
  /** The registry version pools follow, and the registry it was given for. */
  private version = 0;
  private versionOf = '';
  /** The push of the latest registry version to the pool objects. */
  private pushed: Promise<void> = Promise.resolve();

  protected async start(): Promise<void> {
    this.build();
    this.version = this.epoch * LEASE_SPAN;
    if (this.env.FLEET_POOLS) {
      this.pools = new PoolDirectory(this.env.FLEET_POOLS, this.store, this.logger);
      this.poolLoads = new PoolLoads(this.pools);
    }
    const saved = this.store.load<SavedState>('fleet');
    const probeNow =
      saved === undefined || restoreSaved(this.fleet, saved, workerSpecsFromConfig(this.config));
    // New workers get a first probe before the object serves anything, but no longer than
    // STARTUP_PROBE_WAIT_MS (blockConcurrencyWhile gives up after 30 s); the rest lands later.
    if (probeNow) {
      await Promise.race([this.probe(), new Promise((r) => setTimeout(r, STARTUP_PROBE_WAIT_MS))]);
    }
    this.persist();
    if ((await this.ctx.storage.getAlarm()) === null)
      await this.ctx.storage.setAlarm(this.now() + this.period());
  }

  /** One health tick (or, with health checks off, a models lookup), then persist; never throws. */
  private async probe(): Promise<void> {
    try {
      await this.router.refreshWorkers();
    } catch (err) {
      this.logger.warn('health tick failed', { error: err });
    }
    this.persist();
  }

  /** Alarm period: the health-check interval, or (checks off) the lease TTL for reclaiming leases. */
  private period(): number {
    const secs = this.config.health.disabled
      ? this.config.server.requestTimeoutSecs
      : this.config.health.intervalSecs;
    return Math.max(1000, secs * 1000);
  }

  override async alarm(): Promise<void> {
    this.calls.alarm = (this.calls.alarm ?? 0) + 1;
    try {
      this.fleet.expireLeases();
      if (!this.config.health.disabled) await this.probe();
      else this.persist();
    } finally {
      await this.ctx.storage.setAlarm(this.now() + this.period());
    }
  }

  // ---- persistence and the registry the pools follow -----------------------------------------

  protected save(): void {
    const state: SavedState = {
      fleet: this.fleet.exportState(),
      configWorkers: workerSpecsFromConfig(this.config).map(specId),
    };
    this.store.save('fleet', state);
    this.pushed = this.publish();
  }

  /** The registry under its version; the version moves when the registry changed since. */
  private currentRegistry(): RegistrySnapshot & { changed: boolean } {
    const workers = this.fleet.registry.view();
    const text = JSON.stringify(workers);
    const changed = text !== this.versionOf;
    if (changed) {
      this.versionOf = text;
      this.version++;
    }
    return { version: this.version, workers, changed };
  }

  /** Pushes the registry to every pool object if it changed (never throws). */
  private publish(): Promise<void> {
    const { changed, ...snapshot } = this.currentRegistry();
    return changed ? this.push(snapshot) : Promise.resolve();
  }

  private async push(snapshot: RegistrySnapshot): Promise<void> {
    await this.pools?.each('follow', (pool) => pool.follow(snapshot));
  }

  /** Serves an admin call that changes the registry: persisted, and pushed before it answers. */
  private async change<T>(method: string, fn: () => T): Promise<T> {
    const result = this.serve(method, fn, 'now');
    await this.pushed;
    return result;
  }

  // ---- RPC -----------------------------------------------------------------------------------

  async route(input: RouteInput, known?: number): Promise<RouteReply> {
    const model = input.model;
    let reply: RouteReply | undefined;
    // A caller that follows versions settles where `shard` says: pass its request on to the pool.
    if (this.pools && known !== undefined && model !== undefined && this.fleet.models().includes(model)) {
      const shard = poolObjectName(this.name, model);
      try {
        reply = { ...(await this.pools.stub(shard).route(input, known)), shard };
        this.count('route');
      } catch (err) {
        this.logger.warn('pool object did not answer a route; routed here', { pool: shard, error: err });
      }
    }
    reply ??= this.routeHere(input);
    if (known !== undefined && known < this.version) {
      reply.news = { version: this.version, models: this.fleet.models() };
    }
    return reply;
  }

  async registry(pool: string): Promise<RegistrySnapshot> {
    this.pools?.register(pool);
    const { changed, ...snapshot } = this.serve('registry', () => this.currentRegistry());
    if (changed) this.pushed = this.push(snapshot);
    return snapshot;
  }

  async reportCircuits(reports: CircuitReport[]): Promise<void> {
    const moved = this.serve('reportCircuits', () =>
      reports.filter((r) => this.fleet.registry.adoptCircuit(r.id, { state: r.open ? 'open' : 'closed' })),
    );
    if (moved.length > 0) this.persist();
  }

  async listWorkers(): Promise<WorkerInfo[]> {
    this.expireDue();
    const workers = this.serve('listWorkers', () => this.fleet.listWorkers());
    return this.poolLoads ? this.poolLoads.add(workers) : workers;
  }

  async getWorker(id: string): Promise<WorkerInfo | undefined> {
    const w = this.serve('getWorker', () => this.fleet.getWorker(id));
    return this.poolLoads ? (await this.poolLoads.add(w ? [w] : [], id))[0] : w;
  }

  async addWorker(spec: WorkerSpec): Promise<AddWorkerReply> {
    return this.change('addWorker', (): AddWorkerReply => {
      try {
        const worker = this.fleet.addWorker(spec);
        this.poolLoads?.added(worker.id);
        return { ok: true, worker };
      } catch (err) {
        if (err instanceof WorkerConflictError) return { ok: false, conflict: err.message };
        throw err;
      }
    });
  }

  async updateWorker(id: string, patch: WorkerPatch): Promise<WorkerInfo | undefined> {
    return this.change('updateWorker', () => this.fleet.updateWorker(id, patch));
  }

  async recordProbes(reports: ProbeReport[]): Promise<void> {
    return this.change('recordProbes', () => this.fleet.recordProbes(reports));
  }

  async removeWorker(id: string): Promise<boolean> {
    return this.change('removeWorker', () => {
      const listed = this.fleet.getWorker(id);
      const removed = this.fleet.removeWorker(id);
      if (listed && !this.fleet.getWorker(id)) this.poolLoads?.forgotten(listed);
      return removed;
    });
  }

  async setWorkerModels(id: string, models: string[]): Promise<void> {
    return this.change('setWorkerModels', () => this.fleet.setWorkerModels(id, models));
  }

  async finishSession(sessionId: string): Promise<void> {
    this.serve('finishSession', () => this.fleet.finishSession(sessionId), 'soon');
    await this.pools?.each('finishSession', (p) => p.finishSession(sessionId));
  }

  async models(): Promise<string[]> {
    return this.serve('models', () => this.fleet.models());
  }

  async snapshot(): Promise<FleetSnapshot> {
    this.expireDue();
    const { workers, models } = this.serve('snapshot', () => this.fleet.snapshot());
    return { workers: this.poolLoads ? await this.poolLoads.add(workers) : workers, models };
  }

  async metricsText(metrics?: MetricsDelta): Promise<string> {
    if (metrics) this.requestMetrics.add(metrics);
    const own = await this.ownMetricsText();
    return sumMetricsTexts(own, (await this.pools?.each('metricsText', (p) => p.metricsText())) ?? []);
  }
}
