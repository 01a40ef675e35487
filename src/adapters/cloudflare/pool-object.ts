/**
 * PoolObject: the Durable Object that routes one model's requests (`idFromName('fleet/pool:<model>')`)
 * for the fleet's main object (fleet-object.ts), so that each model pool gets its own ~1,000
 * calls/s. It runs the same core `Fleet` as the main object, over the main object's registry:
 *
 * - Routing state is its own: the policy's state (prefix tree, sticky sessions), the leases and
 *   load of its requests, and the breaker outcomes of their attempts. A worker serving several
 *   models has one load per pool: policies compare the loads of this model's requests only.
 * - Registry: pulled from the main object at start (inside `blockConcurrencyWhile`), then pushed
 *   by it on every change. A pool that missed a push pulls again before routing when an isolate
 *   saw a newer version, and in the background once its copy is REGISTRY_MAX_AGE_MS old. Following
 *   is in place (Fleet.follow): a worker the main object removed drains here while leased.
 * - Breakers: one that opens or closes again here is reported to the main object in the
 *   background; it takes the pool's word and pushes the change, so every pool keeps off an engine
 *   another pool found broken (and takes it back once one closed it). Pushback cooldowns,
 *   quarantines and latency estimates stay per pool.
 * - Persistence: its fleet state (policy snapshots, processed counts) in its own SQLite; the alarm
 *   reclaims expired leases while any are held.
 */
import type { FleetSnapshot, RouteInput } from '../../core/contracts/fleet-api.ts';
import type { PersistedFleet } from '../../core/fleet/fleet.ts';
import type { CircuitView } from '../../core/fleet/registry-view.ts';
import { fleetOfPool } from './bindings.ts';
import { FleetObjectBase } from './object-base.ts';
import type { PoolRpc, RegistryNews, RegistrySnapshot, RouteReply, WorkerLoads } from './rpc.ts';

export const REGISTRY_MAX_AGE_MS = 5_000;

export class PoolObject extends FleetObjectBase implements PoolRpc {
  /** The registry version followed (0: none yet), and when it was last asked for or pushed. */
  private version = 0;
  private pulledAt = Number.NEGATIVE_INFINITY;
  private pulling: Promise<void> | undefined;
  /** Each worker's circuit as the main object last said it (only its changes are adopted). */
  private seen = new Map<string, CircuitView>();
  /** Breakers to report (worker id → open), and the report under way. */
  private readonly reports = new Map<string, boolean>();
  private reporting: Promise<void> | undefined;
  private armed = false;

  protected async start(): Promise<void> {
    this.build();
    const saved = this.store.load<PersistedFleet>('fleet');
    if (saved) this.fleet.restoreState(saved);
    await this.pull();
  }

  protected save(): void {
    this.store.save('fleet', this.fleet.exportState());
  }

  private main() {
    const namespace = this.env.FLEET;
    return namespace.get(namespace.idFromName(fleetOfPool(this.name)));
  }

  /** Pulls the registry from the main object (one pull at a time; never throws). */
  private pull(): Promise<void> {
    this.pulling ??= (async () => {
      this.pulledAt = this.now(); // a failed pull is tried again after REGISTRY_MAX_AGE_MS too
      try {
        this.apply(await this.main().registry(this.name));
        if (this.reports.size > 0) this.report();
      } catch (err) {
        this.logger.warn('registry pull from the fleet object failed', { error: err });
      } finally {
        this.pulling = undefined;
      }
    })();
    return this.pulling;
  }

  private apply(snapshot: RegistrySnapshot): void {
    this.pulledAt = this.now();
    if (snapshot.version <= this.version) return;
    this.version = snapshot.version;
    this.fleet.registry.follow(snapshot.workers);
    const seen = new Map<string, CircuitView>();
    for (const { id, circuit } of snapshot.workers) {
      const before = this.seen.get(id);
      if (before?.state !== circuit.state || before.openedAt !== circuit.openedAt) {
        this.fleet.registry.adoptCircuit(id, circuit);
      }
      seen.set(id, circuit);
    }
    this.seen = seen;
    this.persist();
  }

  /** Before routing: catch up with a version an isolate has seen; refresh an old copy meanwhile. */
  private async freshen(known: number | undefined): Promise<void> {
    if (known !== undefined && known > this.version) await this.pull();
    else if (this.now() - this.pulledAt > REGISTRY_MAX_AGE_MS) void this.pull();
  }

  private news(): RegistryNews {
    return { version: this.version, models: this.fleet.models() };
  }

  protected override fleetEvent(message: string, fields: Record<string, unknown>): void {
    if (message !== 'circuit breaker' || typeof fields.worker !== 'string') return;
    if (fields.to !== 'open' && fields.to !== 'closed') return;
    this.reports.set(fields.worker, fields.to === 'open');
    this.report();
  }

  /** Sends the pending breaker reports to the main object, off the request path. */
  private report(): void {
    this.reporting ??= (async () => {
      while (this.reports.size > 0) {
        const batch = [...this.reports].map(([id, open]) => ({ id, open }));
        this.reports.clear();
        try {
          await this.main().reportCircuits(batch);
        } catch (err) {
          for (const r of batch) if (!this.reports.has(r.id)) this.reports.set(r.id, r.open);
          this.logger.warn('breaker report to the fleet object failed', { error: err });
          return;
        }
      }
    })().finally(() => {
      this.reporting = undefined;
    });
  }

  /** The alarm reclaims expired leases: armed while leases may be held. */
  private arm(): void {
    if (this.armed) return;
    this.armed = true;
    void this.ctx.storage.setAlarm(this.now() + this.config.server.requestTimeoutSecs * 1000);
  }

  override async alarm(): Promise<void> {
    this.calls.alarm = (this.calls.alarm ?? 0) + 1;
    this.armed = false;
    this.fleet.expireLeases();
    this.persist();
    if (this.reports.size > 0) this.report();
    if (this.fleet.inFlight > 0) this.arm();
  }

  // ---- RPC -----------------------------------------------------------------------------------

  async route(input: RouteInput, known?: number): Promise<RouteReply> {
    await this.freshen(known);
    const reply = this.routeHere(input);
    this.arm();
    if (known !== undefined && known < this.version) reply.news = this.news();
    return reply;
  }

  async follow(snapshot: RegistrySnapshot): Promise<void> {
    this.serve('follow', () => this.apply(snapshot));
  }

  async finishSession(sessionId: string): Promise<void> {
    this.serve('finishSession', () => this.fleet.finishSession(sessionId), 'soon');
  }

  async loads(): Promise<WorkerLoads> {
    this.expireDue();
    return this.serve('loads', () => {
      const loads: WorkerLoads = {};
      for (const w of this.fleet.listWorkers()) loads[w.id] = { load: w.load, processed: w.processed };
      return loads;
    });
  }

  /** What this pool object holds (tests and operators; the main object's listing is the reference). */
  async snapshot(): Promise<FleetSnapshot & { version: number }> {
    return this.serve('snapshot', () => ({ ...this.fleet.snapshot(), version: this.version }));
  }

  async metricsText(): Promise<string> {
    return this.ownMetricsText();
  }
}
