/**
 * FleetObject: the fleet's state on Cloudflare Workers. A SQLite-backed Durable Object holding the
 * core `Fleet` (workers, health, breakers, leases, sticky sessions, policy state); isolates call it
 * by RPC (fleet-client.ts) for routing decisions and stream the engines' bytes themselves.
 *
 * - Persistence: `Fleet.exportState()` (registry, health, breakers, policy snapshots) is written to
 *   SQLite at once after every admin change, every probe round and every call that moved a breaker
 *   or a worker's health; other changes (processed counts, session bookkeeping) at most every
 *   SOFT_FLUSH_MS. It is restored at start inside `blockConcurrencyWhile`; policy trees rebuild.
 * - Leases live in memory with an expiry (the request timeout) and are reclaimed on the alarm and,
 *   at most once a second, on routing calls. Lease numbers carry the object's start epoch, so a
 *   lease taken before a restart can never release a lease taken after it.
 * - The alarm runs the health tick every --health-check-interval-secs and re-arms itself.
 * - Config: `ROUTER_CONFIG` (JSON, the router's schema) plus secrets, read the same way as in the
 *   isolates. A config whose worker list changed since the state was saved (a redeploy) adds the
 *   new config workers and removes the dropped ones; admin changes otherwise survive restarts.
 */
import { DurableObject } from 'cloudflare:workers';
import type { RouterConfig } from '../../core/config/schema.ts';
import { RouterError } from '../../core/contracts/errors.ts';
import {
  type AttemptOutcome,
  type FleetSnapshot,
  type ProbeReport,
  type RouteInput,
  WorkerConflictError,
  type WorkerInfo,
  type WorkerPatch,
  type WorkerSpec,
} from '../../core/contracts/fleet-api.ts';
import { type Clock, systemClock, systemRandom } from '../../core/contracts/runtime.ts';
import type { Fleet } from '../../core/fleet/fleet.ts';
import { workerSpecsFromConfig } from '../../core/fleet/from-config.ts';
import type { Logger } from '../../core/observability/logger.ts';
import { MetricsRegistry } from '../../core/observability/metrics.ts';
import { createRouter, type Router } from '../../core/router.ts';
import { fetchUpstream } from '../../core/upstream/fetch-upstream.ts';
import { type FleetBindings, readRouterConfig } from './bindings.ts';
import { consoleSink } from './console-sink.ts';
import {
  type AddWorkerReply,
  type FleetRpc,
  MetricsAggregate,
  type MetricsDelta,
  type RouteReply,
} from './rpc.ts';
import { restoreSaved, type SavedState, specId } from './saved-fleet.ts';
import { StateStore } from './state-store.ts';

/** The bindings, with the fleet namespace typed by this class. */
export interface FleetEnv extends FleetBindings {
  FLEET: DurableObjectNamespace<FleetObject>;
}

/** Lease numbers: epoch × LEASE_SPAN + the fleet's own lease number. */
const LEASE_SPAN = 2 ** 32;
export const SOFT_FLUSH_MS = 10_000;
const EXPIRE_EVERY_MS = 1_000;
const STARTUP_PROBE_WAIT_MS = 5_000;

export class FleetObject extends DurableObject<FleetEnv> implements FleetRpc {
  /** The object's wall clock (leases, breakers, sessions); tests may shift it. */
  now: () => number = () => Date.now();
  /** RPC calls served, by method (tests and benchmarks read it). */
  readonly calls: Record<string, number> = {};
  private readonly clock: Clock = { ...systemClock, now: () => this.now() };
  private readonly metrics = new MetricsRegistry();
  private readonly callCounter = this.metrics.counter(
    'vllm_router_fleet_object_calls_total',
    'Calls served by the fleet Durable Object, by method (Cloudflare: about 1,000/s per object)',
    ['method'],
  );
  private readonly requestMetrics = new MetricsAggregate();
  private readonly store: StateStore;
  private config!: RouterConfig;
  private router!: Router<Fleet>;
  private fleet!: Fleet;
  private logger!: Logger;
  private leaseBase = 0;
  /** A breaker or health flip happened during this call: persist before answering. */
  private urgent = false;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private nextExpiry = 0;

  constructor(ctx: DurableObjectState, env: FleetEnv) {
    super(ctx, env);
    this.store = new StateStore(ctx.storage);
    void ctx.blockConcurrencyWhile(() => this.start());
  }

  private async start(): Promise<void> {
    this.config = readRouterConfig(this.env);
    this.router = createRouter(this.config, {
      upstream: fetchUpstream(),
      logSink: consoleSink,
      clock: this.clock,
      random: systemRandom,
      metrics: this.metrics,
      onFleetEvent: () => {
        this.urgent = true;
      },
    });
    this.fleet = this.router.fleet;
    this.logger = this.router.logger;
    this.leaseBase = this.store.nextEpoch() * LEASE_SPAN;

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

  // ---- persistence ---------------------------------------------------------------------------

  /** Writes pending changes now (what the soft-flush timer does within SOFT_FLUSH_MS). */
  flush(): void {
    this.persist();
  }

  private persist(): void {
    this.urgent = false;
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const state: SavedState = {
      fleet: this.fleet.exportState(),
      configWorkers: workerSpecsFromConfig(this.config).map(specId),
    };
    this.store.save('fleet', state);
  }

  /** After a call that changed state: persist now if it mattered, else within SOFT_FLUSH_MS. */
  private changed(): void {
    if (this.urgent) this.persist();
    else this.flushTimer ??= setTimeout(() => this.persist(), SOFT_FLUSH_MS);
  }

  /** Serves one RPC call: counts it, then persists what it changed (`now`) or schedules it (`soon`). */
  private serve<T>(method: string, fn: () => T, write?: 'now' | 'soon'): T {
    this.calls[method] = (this.calls[method] ?? 0) + 1;
    this.callCounter.labels(method).inc();
    const result = fn();
    if (write === 'now') this.persist();
    else if (write === 'soon') this.changed();
    return result;
  }

  private expireDue(): void {
    const now = this.now();
    if (now < this.nextExpiry) return;
    this.nextExpiry = now + EXPIRE_EVERY_MS;
    this.fleet.expireLeases();
  }

  // ---- RPC -----------------------------------------------------------------------------------

  async route(input: RouteInput): Promise<RouteReply> {
    this.expireDue();
    return this.serve('route', () => this.routeOnce(input), 'soon');
  }

  private routeOnce(input: RouteInput): RouteReply {
    try {
      const result = this.fleet.route(input);
      return result.ok ? { ...result, lease: this.leaseBase + result.lease } : result;
    } catch (err) {
      if (!(err instanceof RouterError)) throw err;
      const error: Extract<RouteReply, { code: 'router_error' }>['error'] = {
        code: err.code,
        message: err.message,
      };
      if (err.param !== null) error.param = err.param;
      if (err.retryAfterSecs !== undefined) error.retryAfterSecs = err.retryAfterSecs;
      return { ok: false, code: 'router_error', error };
    }
  }

  async settle(lease: number, outcome: AttemptOutcome, metrics?: MetricsDelta): Promise<boolean> {
    if (metrics) this.requestMetrics.add(metrics);
    const local = lease - this.leaseBase;
    // A lease from before a restart is already gone (and its number may be reused).
    const ours = local > 0 && local < LEASE_SPAN;
    return this.serve('settle', () => ours && this.fleet.settle(local, outcome), 'soon');
  }

  async listWorkers(): Promise<WorkerInfo[]> {
    this.expireDue();
    return this.serve('listWorkers', () => this.fleet.listWorkers());
  }

  async getWorker(id: string): Promise<WorkerInfo | undefined> {
    return this.serve('getWorker', () => this.fleet.getWorker(id));
  }

  async addWorker(spec: WorkerSpec): Promise<AddWorkerReply> {
    return this.serve(
      'addWorker',
      (): AddWorkerReply => {
        try {
          return { ok: true, worker: this.fleet.addWorker(spec) };
        } catch (err) {
          if (err instanceof WorkerConflictError) return { ok: false, conflict: err.message };
          throw err;
        }
      },
      'now',
    );
  }

  async updateWorker(id: string, patch: WorkerPatch): Promise<WorkerInfo | undefined> {
    return this.serve('updateWorker', () => this.fleet.updateWorker(id, patch), 'now');
  }

  async recordProbes(reports: ProbeReport[]): Promise<void> {
    return this.serve('recordProbes', () => this.fleet.recordProbes(reports), 'now');
  }

  async removeWorker(id: string): Promise<boolean> {
    return this.serve('removeWorker', () => this.fleet.removeWorker(id), 'now');
  }

  async setWorkerModels(id: string, models: string[]): Promise<void> {
    return this.serve('setWorkerModels', () => this.fleet.setWorkerModels(id, models), 'now');
  }

  async finishSession(sessionId: string): Promise<void> {
    return this.serve('finishSession', () => this.fleet.finishSession(sessionId), 'soon');
  }

  async models(): Promise<string[]> {
    return this.serve('models', () => this.fleet.models());
  }

  async snapshot(): Promise<FleetSnapshot> {
    this.expireDue();
    return this.serve('snapshot', () => this.fleet.snapshot());
  }

  async metricsText(metrics?: MetricsDelta): Promise<string> {
    if (metrics) this.requestMetrics.add(metrics);
    this.expireDue();
    const fleetText = await this.serve('metricsText', () => this.metrics.render());
    return fleetText + this.requestMetrics.render();
  }
}
