/**
 * ReplicaFleet: the in-memory fleet of one router replica among several that share a store
 * (shared-fleet.ts). On top of `Fleet`, it takes what the other replicas report: their registry
 * (followed in place), their breaker and health verdicts, their session placements and
 * `cache_aware` placements, and their summed load; and it answers what this replica reports: its
 * own load and its own verdict on a worker. Nothing it adopts is reported back. Pools are named
 * in the store as their policies know them (`<role>:<model>`), and a pool another replica names
 * is created here if this replica has not routed to it yet, so no placement is lost.
 */
import type { RouteInput, WorkerRole } from '../contracts/fleet-api.ts';
import type { SharedVerdict, SharedWorker } from '../contracts/shared-store.ts';
import { Fleet } from './fleet.ts';
import type { SessionPlace } from './fleet-sharing.ts';
import { type Pool, WILDCARD } from './pools.ts';
import type { WorkerView } from './registry-view.ts';

const ROLES: readonly string[] = ['regular', 'prefill', 'decode'] satisfies WorkerRole[];

/**
 * A worker's models as a replica follows them: the registry's when configured or set through the
 * admin API; learned from `/v1/models`, this replica's own reading once it has one (as its health
 * is its own), the registry's until then.
 */
function followedModels(
  entry: SharedWorker,
  mine: WorkerView | undefined,
): Pick<WorkerView, 'models' | 'modelsStatic'> {
  if (entry.modelsStatic || !mine || mine.modelsStatic || mine.models === null) {
    return { models: entry.models, modelsStatic: entry.modelsStatic };
  }
  return { models: mine.models, modelsStatic: false };
}

export class ReplicaFleet extends Fleet {
  /** Where a request's session lives, when its pool's policy keeps sessions. */
  sessionOf(input: RouteInput): SessionPlace | undefined {
    const sessionId = input.sessionId;
    if (sessionId === undefined) return undefined;
    const pool = this.poolFor(input);
    const knows = pool?.policy.knowsSession;
    if (!pool || !knows) return undefined;
    return { pool: pool.label, known: knows(sessionId) };
  }

  /** Another replica placed a session; false when this fleet cannot follow (unknown worker or pool). */
  adoptSession(pool: string, sessionId: string, workerId: string): boolean {
    if (!this.workers.has(workerId)) return false;
    let adopted = false;
    for (const target of this.poolsNamed(pool)) {
      if (!target.policy.adoptSession) continue;
      target.policy.adoptSession(sessionId, workerId);
      adopted = true;
    }
    return adopted;
  }

  /** Another replica's `cache_aware` placement, recorded in this replica's tree for that pool. */
  recordPrefix(pool: string, text: string, workerId: string): void {
    if (!this.workers.has(workerId)) return;
    for (const target of this.poolsNamed(pool)) target.policy.recordPrefix?.(text, workerId);
  }

  /**
   * The local pools another replica's pool name stands for, created when this replica has not
   * routed to them yet (their policies start from what the others report). `<role>:*` names both
   * the any-model pool and the unknown-models one (the label does not tell them apart).
   */
  private poolsNamed(name: string): Pool[] {
    const at = name.indexOf(':');
    const role = name.slice(0, at) as WorkerRole;
    const model = name.slice(at + 1);
    if (at < 0 || !ROLES.includes(role)) return [];
    if (model !== WILDCARD)
      return this.pools.knownModels.includes(model) ? [this.pools.get(role, model)] : [];
    const any = this.pools.get(role, undefined);
    return this.pools.hasUnknownModels ? [any, this.pools.get(role, WILDCARD)] : [any];
  }

  /** This replica's requests in flight per worker (only those with any). */
  ownLoad(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const w of this.workers.values()) if (w.ownLoad > 0) out[w.id] = w.ownLoad;
    return out;
  }

  /** The other replicas' in-flight counts: what the policies see as load is this replica's plus theirs. */
  setRemoteLoad(remote: Readonly<Record<string, number>>): void {
    for (const w of this.workers.values()) w.load = w.ownLoad + Math.max(0, remote[w.id] ?? 0);
  }

  /** This replica's word on a worker (its health and breaker), to share. */
  verdictOf(id: string, now: number): SharedVerdict | undefined {
    const w = this.workers.get(id);
    if (!w) return undefined;
    const circuit: NonNullable<SharedVerdict['circuit']> = { state: w.breaker.state };
    if (w.breaker.openedAt !== undefined) circuit.openedAt = w.breaker.openedAt;
    return { healthy: w.health.healthy, circuit, at: now };
  }

  /** Another replica's verdict: its health and breaker state hold here too. */
  adoptVerdict(id: string, verdict: SharedVerdict): void {
    if (!this.workers.has(id)) return;
    if (verdict.healthy !== undefined) this.setWorkerHealth(id, verdict.healthy);
    if (verdict.circuit && verdict.circuit.state !== 'half_open')
      this.registry.adoptCircuit(id, verdict.circuit);
  }

  /**
   * Follows the store's registry: its workers, with their overrides, models and draining state;
   * workers this replica discovered itself (Kubernetes, P2P) and those it changed and has not
   * written yet (`pending`) stay as they are. Verdicts apply to workers this replica just learnt.
   */
  followShared(
    entries: readonly SharedWorker[],
    verdicts: Readonly<Record<string, SharedVerdict>>,
    pending: ReadonlySet<string>,
  ): void {
    const own = new Map(this.registry.view().map((v) => [v.id, v]));
    const views: WorkerView[] = [];
    const listed = new Set<string>();
    for (const e of entries) {
      listed.add(e.id);
      const mine = own.get(e.id);
      if (mine && (pending.has(e.id) || mine.spec.source !== undefined)) {
        views.push(mine);
        continue;
      }
      const verdict = verdicts[e.id];
      const healthy = mine?.healthy ?? verdict?.healthy ?? !this.probing;
      const circuit = mine?.circuit ?? { state: 'closed' as const };
      views.push({ ...e, ...followedModels(e, mine), healthy, circuit });
    }
    for (const [id, mine] of own) {
      if (!listed.has(id) && (pending.has(id) || mine.spec.source !== undefined)) views.push(mine);
    }
    const known = new Set(own.keys());
    this.registry.follow(views);
    for (const [id, verdict] of Object.entries(verdicts)) {
      if (!known.has(id)) this.adoptVerdict(id, verdict);
    }
  }
}
