/**
 * The in-memory fleet: worker registry, one policy instance per (role, model) pool, and load
 * leases. Node and Deno use it directly; the Workers adapter runs it inside a Durable Object.
 */
import type { Clock } from '../deps.ts';
import type { Policy, PolicyContext } from '../policies/policy.ts';
import { createPolicy } from '../policies/registry.ts';
import type {
  AttemptOutcome,
  FleetApi,
  FleetSnapshot,
  RouteInput,
  RouteResult,
  WorkerInfo,
  WorkerRole,
  WorkerSpec,
} from './fleet-api.ts';
import { LeaseTable } from './leases.ts';
import { createWorkerRecord, servesModel, type WorkerRecord, workerInfo } from './workers.ts';

export interface FleetOptions {
  /** Policy name for each role's pools. */
  policies: Record<WorkerRole, string>;
  /** Shared by every pool's policy instance (each gets its own `pool` label). */
  policyContext: Omit<PolicyContext, 'pool'>;
  clock: Clock;
  /** How long a lease may live before it is reclaimed (the request timeout). */
  leaseTtlMs: number;
  workers?: readonly WorkerSpec[];
}

/** Requests for a model no known worker lists go to the wildcard pool (workers whose models are unknown). */
const WILDCARD = '*';

interface Pool {
  readonly key: string;
  readonly role: WorkerRole;
  readonly model: string;
  readonly policy: Policy;
  members: WorkerRecord[];
  version: number;
}

export class Fleet implements FleetApi {
  private readonly workers = new Map<string, WorkerRecord>();
  private readonly pools = new Map<string, Pool>();
  private readonly leases = new LeaseTable();
  private knownModels: string[] = [];
  private hasUnknownModels = false;
  private version = 0;

  constructor(private readonly options: FleetOptions) {
    // Fail at startup, not on the first request, when a policy is unavailable.
    for (const name of new Set(Object.values(options.policies))) {
      createPolicy(name, { ...options.policyContext, pool: 'startup-check' });
    }
    for (const spec of options.workers ?? []) this.addWorker(spec);
  }

  route(input: RouteInput): RouteResult {
    const role = input.role ?? 'regular';
    const model = input.model;
    if (model !== undefined && !this.hasUnknownModels && !this.knownModels.includes(model)) {
      return this.workers.size === 0
        ? { ok: false, code: 'no_available_workers', models: [] }
        : { ok: false, code: 'model_not_found', models: [...this.knownModels] };
    }
    const pool = this.pool(role, model === undefined || this.knownModels.includes(model) ? model : WILDCARD);
    const candidates = eligible(pool.members, input.exclude);
    const picked = candidates.length === 0 ? undefined : pool.policy.select(candidates, input);
    if (!picked) return { ok: false, code: 'no_available_workers', models: [...this.knownModels] };
    const worker = this.workers.get(picked.id);
    if (!worker) return { ok: false, code: 'no_available_workers', models: [...this.knownModels] };
    const lease = this.leases.take(worker, pool.key, this.options.clock.now() + this.options.leaseTtlMs);
    const routed =
      worker.dpRank === undefined
        ? { id: worker.id, url: worker.url }
        : { id: worker.id, url: worker.url, dpRank: worker.dpRank };
    return { ok: true, worker: routed, lease };
  }

  settle(lease: number, outcome: AttemptOutcome): boolean {
    const released = this.leases.release(lease);
    if (!released) return false;
    this.pools.get(released.poolKey)?.policy.onSettle?.(released.worker, outcome);
    const w = released.worker;
    if (w.draining && w.load === 0 && this.workers.get(w.id) === w) this.forget(w);
    return true;
  }

  /** Reclaims leases past their expiry (callers that never settled). Returns how many. */
  expireLeases(): number {
    const expired = this.leases.expire(this.options.clock.now());
    for (const { worker } of expired) {
      if (worker.draining && worker.load === 0 && this.workers.get(worker.id) === worker) this.forget(worker);
    }
    return expired.length;
  }

  get inFlight(): number {
    return this.leases.size;
  }

  listWorkers(): WorkerInfo[] {
    return [...this.workers.values()].map(workerInfo);
  }

  addWorker(spec: WorkerSpec): WorkerInfo {
    const record = createWorkerRecord(spec);
    if (this.workers.has(record.id)) throw new Error(`worker ${record.id} already exists`);
    this.workers.set(record.id, record);
    this.changed();
    return workerInfo(record);
  }

  removeWorker(id: string): boolean {
    const w = this.workers.get(id);
    if (!w) return false;
    if (w.load > 0) {
      w.draining = true;
      this.changed();
    } else {
      this.forget(w);
    }
    return true;
  }

  setWorkerModels(id: string, models: string[]): void {
    const w = this.workers.get(id);
    if (!w) return;
    w.models = models.length > 0 ? [...models] : null;
    this.changed();
  }

  setWorkerHealth(id: string, healthy: boolean): void {
    const w = this.workers.get(id);
    if (w) w.healthy = healthy;
  }

  finishSession(sessionId: string): void {
    for (const pool of this.pools.values()) pool.policy.finishSession?.(sessionId);
  }

  models(): string[] {
    return [...this.knownModels];
  }

  snapshot(): FleetSnapshot {
    return { workers: this.listWorkers(), models: this.models() };
  }

  private forget(w: WorkerRecord): void {
    this.workers.delete(w.id);
    for (const pool of this.pools.values()) pool.policy.onWorkerRemoved?.(w.id);
    this.changed();
  }

  private changed(): void {
    this.version++;
    const models = new Set<string>();
    let unknown = false;
    for (const w of this.workers.values()) {
      if (w.draining) continue;
      if (w.models === null) unknown = true;
      else for (const m of w.models) models.add(m);
    }
    this.knownModels = [...models];
    this.hasUnknownModels = unknown;
  }

  private pool(role: WorkerRole, model: string | undefined): Pool {
    const name = model ?? '';
    const key = `${role}\u0001${name}`;
    let pool = this.pools.get(key);
    if (!pool) {
      const policy = createPolicy(this.options.policies[role], {
        ...this.options.policyContext,
        pool: `${role}:${name === '' ? '*' : name}`,
      });
      pool = { key, role, model: name, policy, members: [], version: -1 };
      this.pools.set(key, pool);
    }
    if (pool.version !== this.version) {
      pool.members = [];
      for (const w of this.workers.values()) {
        if (w.role !== role || w.draining) continue;
        if (model === WILDCARD ? w.models === null : servesModel(w, model)) pool.members.push(w);
      }
      pool.version = this.version;
    }
    return pool;
  }
}

function eligible(members: WorkerRecord[], exclude: readonly string[] | undefined): WorkerRecord[] {
  let all = true;
  for (const w of members) {
    if (!w.healthy || exclude?.includes(w.id)) {
      all = false;
      break;
    }
  }
  if (all) return members;
  return members.filter((w) => w.healthy && !(exclude?.includes(w.id) ?? false));
}
