/**
 * The in-memory fleet: worker registry with health and breaker state, one policy instance per
 * (role, model) pool, and load leases. Node and Deno use it directly; the Workers adapter runs it
 * inside a Durable Object.
 */

import { defaultRouterConfig } from '../config/schema.ts';
import {
  type AttemptOutcome,
  type FleetApi,
  type FleetSnapshot,
  type ProbeReport,
  type RoutedWorker,
  type RouteInput,
  type RouteResult,
  WorkerConflictError,
  type WorkerInfo,
  type WorkerPatch,
  type WorkerRole,
  type WorkerSpec,
} from '../contracts/fleet-api.ts';
import type { Clock } from '../contracts/runtime.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import type { PolicyContext } from '../policies/policy.ts';
import type { BreakerSettings, BreakerTransition } from '../resilience/circuit-breaker.ts';
import { type CandidateContext, chooseCandidates } from './candidates.ts';
import { createFleetMetrics, type FleetMetrics } from './fleet-metrics.ts';
import type { FleetSharing } from './fleet-sharing.ts';
import type { HealthSettings } from './health-state.ts';
import { LeaseTable } from './leases.ts';
import { type PersistedFleet, persistWorker, restoreWorker } from './persisted.ts';
import { type Pool, PoolSet, WILDCARD } from './pools.ts';
import { applyProbes } from './probe-results.ts';
import { RegistryLink } from './registry-view.ts';
import { admit, recordOutcome } from './worker-outcome.ts';
import { type SignalSettings, signalSettings } from './worker-signals.ts';
import { applyWorkerPatch, createWorkerRecord, type WorkerRecord, workerInfo } from './workers.ts';

export type { PersistedFleet } from './persisted.ts';

export interface FleetOptions {
  /** Policy name for each role's pools. */
  policies: Record<WorkerRole, string>;
  /** Shared by every pool's policy instance (each gets its own `pool` label). */
  policyContext: Omit<PolicyContext, 'pool'>;
  clock: Clock;
  /** How long a lease may live before it is reclaimed (the request timeout). */
  leaseTtlMs: number;
  workers?: readonly WorkerSpec[];
  breaker?: BreakerSettings;
  /** Cooldowns, slowness and the breakers' ejection limit (default: the config schema's defaults). */
  signals?: SignalSettings;
  /** Active health checks: new workers wait for their first good probe. */
  health?: HealthSettings & { probing: boolean };
  metrics?: MetricsRegistry;
  /** Told about health and breaker changes (for the log): `warn` when a worker drops out. */
  onEvent?: (level: 'info' | 'warn', message: string, fields: Record<string, unknown>) => void;
  /** Router replicas sharing a store: told of this fleet's own breaker and health changes. */
  sharing?: Pick<FleetSharing, 'circuitChanged' | 'healthChanged'>;
}

const NO_BREAKER: BreakerSettings = {
  failureThreshold: 1,
  successThreshold: 1,
  timeoutDurationSecs: 1,
  windowDurationSecs: 1,
  disabled: true,
};

export class Fleet implements FleetApi {
  protected readonly workers = new Map<string, WorkerRecord>();
  protected readonly pools: PoolSet;
  private readonly leases = new LeaseTable();
  private readonly breaker: BreakerSettings;
  /** The breaker and signal settings, as recordOutcome takes them. */
  private readonly settings: { breaker: BreakerSettings; signals: SignalSettings };
  private readonly candidateContext: CandidateContext;
  protected readonly probing: boolean;
  private readonly fleetMetrics: FleetMetrics;
  /** The registry as another fleet follows it, in place (registry-view.ts: Workers pool objects). */
  readonly registry = new RegistryLink(this.workers, {
    probing: () => this.probing,
    now: () => this.options.clock.now(),
    changed: () => this.changed(),
    remove: (id) => this.removeWorker(id),
  });

  constructor(protected readonly options: FleetOptions) {
    this.breaker = options.breaker ?? NO_BREAKER;
    this.settings = {
      breaker: this.breaker,
      signals: options.signals ?? signalSettings(defaultRouterConfig()),
    };
    this.candidateContext = { now: 0, ...this.settings };
    this.probing = options.health?.probing ?? false;
    this.fleetMetrics = createFleetMetrics(options.metrics);
    this.pools = new PoolSet(this.workers, options.policies, options.policyContext);
    for (const spec of options.workers ?? []) this.addWorker(spec);
  }

  /** The pool a request goes to; undefined when no worker serves its model. */
  protected poolFor(input: RouteInput): Pool | undefined {
    const model = input.model;
    const known = model === undefined || this.pools.knownModels.includes(model);
    if (!known && !this.pools.hasUnknownModels) return undefined;
    return this.pools.get(input.role ?? 'regular', known ? model : WILDCARD);
  }

  route(input: RouteInput): RouteResult {
    const pool = this.poolFor(input);
    if (!pool) {
      return this.workers.size === 0
        ? { ok: false, code: 'no_available_workers', models: [] }
        : { ok: false, code: 'model_not_found', models: [...this.pools.knownModels] };
    }
    const now = this.options.clock.now();
    const context = this.candidateContext;
    context.now = now; // one context object, its time renewed per decision
    const candidates = chooseCandidates(pool.members, input, context);
    const picked = candidates.length === 0 ? undefined : pool.policy.select(candidates, input);
    const worker = picked === undefined ? undefined : this.workers.get(picked.id);
    if (!worker) return { ok: false, code: 'no_available_workers', models: [...this.pools.knownModels] };
    const gate = admit(worker, this.breaker, now);
    if (gate.transition) this.transitioned(worker, gate.transition);
    if (!gate.allow) return { ok: false, code: 'no_available_workers', models: [...this.pools.knownModels] };
    const attempt = { stream: input.stream === true, routedAt: now, sessionId: input.sessionId };
    const lease = this.leases.take(worker, pool.key, now + this.options.leaseTtlMs, gate, attempt);
    pool.policy.onDispatch?.(worker, input);
    const routed: RoutedWorker = { id: worker.id, url: worker.url };
    if (worker.dpRank !== undefined) routed.dpRank = worker.dpRank;
    if (worker.bootstrapPort !== undefined) routed.bootstrapPort = worker.bootstrapPort;
    if (worker.retry !== undefined) routed.retry = worker.retry;
    return { ok: true, worker: routed, lease };
  }

  settle(lease: number, outcome: AttemptOutcome): boolean {
    const released = this.leases.release(lease);
    if (!released) return false;
    const w = released.worker;
    this.pools.byKey(released.poolKey)?.policy.onSettle?.(w, outcome, released);
    const r = recordOutcome(released, outcome, this.options.clock.now(), this.settings);
    if (r.counted) this.fleetMetrics.outcome(w.id, outcome.kind);
    if (r.transition) this.transitioned(w, r.transition);
    if (r.quarantined) {
      this.options.onEvent?.('warn', 'worker quarantined: no progress while others answered', {
        worker: w.id,
        until: w.signals.quarantineUntil,
      });
    }
    if (w.draining && w.ownLoad === 0 && this.workers.get(w.id) === w) this.forget(w);
    return true;
  }

  /** Reclaims leases past their expiry (callers that never settled). Returns how many. */
  expireLeases(): number {
    const expired = this.leases.expire(this.options.clock.now());
    for (const lease of expired) {
      const w = lease.worker;
      this.pools.byKey(lease.poolKey)?.policy.onSettle?.(w, { kind: 'aborted' }, lease);
      recordOutcome(lease, { kind: 'aborted' }, this.options.clock.now(), this.settings);
      if (w.draining && w.ownLoad === 0 && this.workers.get(w.id) === w) this.forget(w);
    }
    return expired.length;
  }

  get inFlight(): number {
    return this.leases.size;
  }

  listWorkers(): WorkerInfo[] {
    return [...this.workers.values()].map(workerInfo);
  }

  getWorker(id: string): WorkerInfo | undefined {
    const w = this.workers.get(id);
    return w ? workerInfo(w) : undefined;
  }

  addWorker(spec: WorkerSpec): WorkerInfo {
    const record = createWorkerRecord(spec, { probing: this.probing });
    if (this.workers.has(record.id)) throw new WorkerConflictError(`worker ${record.id} already exists`);
    this.workers.set(record.id, record);
    this.changed();
    return workerInfo(record);
  }

  updateWorker(id: string, patch: WorkerPatch): WorkerInfo | undefined {
    const w = this.workers.get(id);
    if (!w) return undefined;
    if (applyWorkerPatch(w, patch)) this.changed();
    return workerInfo(w);
  }

  removeWorker(id: string): boolean {
    const w = this.workers.get(id);
    if (!w) return false;
    if (w.ownLoad > 0) {
      w.draining = true;
      this.changed();
    } else {
      this.forget(w);
    }
    return true;
  }

  recordProbes(reports: ProbeReport[]): void {
    const settings = this.options.health ?? { failureThreshold: 1, successThreshold: 1 };
    const now = this.options.clock.now();
    const modelsChanged = applyProbes(this.workers.values(), reports, settings, now, (w, healthy, error) => {
      this.options.sharing?.healthChanged(w.id, healthy);
      const fields = { worker: w.id, ...(error ? { error } : {}) };
      this.options.onEvent?.(
        healthy ? 'info' : 'warn',
        healthy ? 'worker healthy' : 'worker unhealthy',
        fields,
      );
    });
    if (modelsChanged) this.changed();
  }

  /** Sets a worker's health directly (tests, and adapters without active probing). */
  setWorkerHealth(id: string, healthy: boolean): void {
    const w = this.workers.get(id);
    if (w) w.health = { ...w.health, healthy, everHealthy: w.health.everHealthy || healthy };
  }

  setWorkerModels(id: string, models: string[]): void {
    const w = this.workers.get(id);
    if (!w) return;
    w.models = models.length > 0 ? [...models] : null;
    this.changed();
  }

  finishSession(sessionId: string): void {
    for (const [, pool] of this.pools.all()) pool.policy.finishSession?.(sessionId);
  }

  models(): string[] {
    return [...this.pools.knownModels];
  }

  snapshot(): FleetSnapshot {
    return { workers: this.listWorkers(), models: this.models() };
  }

  /** Everything worth keeping across a restart, as plain JSON (the Durable Object stores it). */
  exportState(): PersistedFleet {
    const policies: Record<string, unknown> = {};
    for (const [key, pool] of this.pools.all()) {
      const state = pool.policy.snapshot?.();
      if (state !== undefined) policies[key] = state;
    }
    return { version: 1, workers: [...this.workers.values()].map(persistWorker), policies };
  }

  /** Replaces the registry with a saved one (breakers, health and sessions included); leases start empty. */
  restoreState(state: PersistedFleet): void {
    this.workers.clear();
    for (const saved of state.workers) {
      const record = restoreWorker(saved, { probing: this.probing });
      this.workers.set(record.id, record);
    }
    this.changed();
    for (const [key, data] of Object.entries(state.policies)) {
      const { role, model } = PoolSet.parseKey(key);
      this.pools.get(role, model).policy.restore?.(data);
    }
  }

  private transitioned(w: WorkerRecord, t: BreakerTransition): void {
    this.fleetMetrics.transition(w.id, t);
    this.options.sharing?.circuitChanged(w.id, {
      state: t.to,
      ...(w.breaker.openedAt === undefined ? {} : { openedAt: w.breaker.openedAt }),
    });
    this.options.onEvent?.(t.to === 'open' ? 'warn' : 'info', 'circuit breaker', {
      worker: w.id,
      from: t.from,
      to: t.to,
    });
  }

  protected forget(w: WorkerRecord): void {
    this.workers.delete(w.id);
    for (const [, pool] of this.pools.all()) pool.policy.onWorkerRemoved?.(w.id);
    this.changed();
  }

  protected changed(): void {
    this.pools.changed();
  }
}
