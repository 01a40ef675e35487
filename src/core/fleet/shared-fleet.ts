/**
 * SharedFleet: a `FleetApi` for router replicas that share one fleet through a store
 * (`--state-store`, contracts/shared-store.ts). Routing stays local: each replica keeps its own
 * in-memory `Fleet`, kept current by the store's events, and decides every request from it. The
 * store is on the request path only where atomicity needs it: the first request of a sticky session
 * this replica has not seen (one lookup, or one atomic claim when no replica placed it yet).
 *
 * What is shared, and how (store-sync.ts runs the background part):
 * - registry and admin changes: written per worker, other replicas re-read and follow it;
 * - breaker states and health verdicts: this replica's own transitions, adopted by the others;
 * - sticky sessions: placement claimed atomically in the store; moves and finishes are events;
 * - load: this replica's in-flight counts per worker, expiring with it; the others' sum is added;
 * - cache_aware placements: the policy works on the compact routing text (block hashes), and each
 *   placement is an event the other replicas record in their own prefix trees.
 * A store that is down or slow never fails a request: the decision is made locally (a fallback,
 * counted and warned about); when it answers again the replica resynchronises.
 */
import type {
  AttemptOutcome,
  FleetApi,
  FleetSnapshot,
  ProbeReport,
  RouteInput,
  RouteResult,
  WorkerInfo,
  WorkerPatch,
  WorkerSpec,
} from '../contracts/fleet-api.ts';
import { compactRoutingText } from '../policies/compact-text.ts';
import type { FleetSharing } from './fleet-sharing.ts';
import type { ReplicaFleet } from './replica-fleet.ts';
import { type StoreLink, UNAVAILABLE } from './store-link.ts';
import { StoreSync, type StoreSyncOptions } from './store-sync.ts';

export interface SharedFleetOptions extends StoreSyncOptions {
  /** Sticky sessions' idle expiry (the policies' own), kept on the store's entries too. */
  sessionTtlMs: number;
}

export class SharedFleet implements FleetApi {
  readonly sync: StoreSync;
  /** Sessions being placed by this replica right now (`pool\0id`): their claim is made in `route`. */
  private readonly claiming = new Set<string>();

  constructor(
    readonly local: ReplicaFleet,
    readonly link: StoreLink,
    private readonly options: SharedFleetOptions,
  ) {
    this.sync = new StoreSync(local, link, options);
  }

  /** The hooks the local fleet reports its own observations through (FleetOptions.sharing). */
  static sharingFor(target: () => SharedFleet | undefined): FleetSharing {
    return {
      circuitChanged: (id) => target()?.sync.verdictChanged(id),
      healthChanged: (id) => target()?.sync.verdictChanged(id),
      sessionPlaced: (pool, sessionId, workerId) => target()?.sessionPlaced(pool, sessionId, workerId),
      prefixRecorded: (pool, text, workerId) => target()?.sync.prefixRecorded(pool, text, workerId),
    };
  }

  async route(input: RouteInput): Promise<RouteResult> {
    const routed = input.text === undefined ? input : { ...input, text: compactRoutingText(input.text) };
    const sessionId = input.sessionId;
    const place = sessionId === undefined ? undefined : this.local.sessionOf(routed);
    if (place === undefined || sessionId === undefined) return this.local.route(routed);
    this.sync.touched(sessionId);
    if (place.known || !this.link.connected) return this.local.route(routed);

    const owner = await this.link.call('session_lookup', () =>
      this.link.store.sessionOwner(place.pool, sessionId),
    );
    if (owner === UNAVAILABLE) return this.local.route(routed);
    if (owner !== undefined && this.local.adoptSession(place.pool, sessionId, owner)) {
      return this.local.route(routed);
    }
    // No replica placed it yet (or its engine is gone): place it here, then claim it atomically.
    const key = `${place.pool}\0${sessionId}`;
    this.claiming.add(key);
    let result: RouteResult;
    try {
      result = this.local.route(routed);
    } finally {
      this.claiming.delete(key);
    }
    if (!result.ok) return result;
    const chosen = result.worker.id;
    const claimed = await this.link.call('session_claim', () =>
      owner === undefined
        ? this.link.store.claimSession(place.pool, sessionId, chosen, this.options.sessionTtlMs)
        : this.link.store
            .moveSession(place.pool, sessionId, chosen, this.options.sessionTtlMs)
            .then(() => chosen),
    );
    if (claimed === UNAVAILABLE || claimed === chosen) {
      if (claimed === chosen) this.sync.sessionEvent(place.pool, sessionId, chosen);
      return result;
    }
    // Another replica placed it first: give this lease back and follow its placement.
    this.local.settle(result.lease, { kind: 'aborted' });
    this.local.adoptSession(place.pool, sessionId, claimed);
    return this.local.route(routed);
  }

  settle(lease: number, outcome: AttemptOutcome): boolean {
    return this.local.settle(lease, outcome);
  }

  listWorkers(): WorkerInfo[] {
    return this.local.listWorkers();
  }

  getWorker(id: string): WorkerInfo | undefined {
    return this.local.getWorker(id);
  }

  addWorker(spec: WorkerSpec): WorkerInfo {
    const info = this.local.addWorker(spec);
    this.sync.registryChanged(info.id);
    return info;
  }

  updateWorker(id: string, patch: WorkerPatch): WorkerInfo | undefined {
    const info = this.local.updateWorker(id, patch);
    if (info) this.sync.registryChanged(id);
    return info;
  }

  recordProbes(reports: ProbeReport[]): void {
    const learned = () =>
      new Map(
        this.local.registry
          .view()
          .filter((v) => !v.modelsStatic)
          .map((v) => [v.id, (v.models ?? []).join('\n')]),
      );
    const before = learned();
    this.local.recordProbes(reports);
    // Models learned from /v1/models go to the registry, for replicas that have not probed yet.
    for (const [id, models] of learned()) if (before.get(id) !== models) this.sync.registryChanged(id);
  }

  removeWorker(id: string): boolean {
    const removed = this.local.removeWorker(id);
    if (removed) this.sync.registryRemoved(id);
    return removed;
  }

  setWorkerModels(id: string, models: string[]): void {
    this.local.setWorkerModels(id, models);
    this.sync.registryChanged(id);
  }

  async finishSession(sessionId: string): Promise<void> {
    this.local.finishSession(sessionId);
    await this.link.call('session_finish', () => this.link.store.finishSession(sessionId));
    this.sync.sessionEvent('*', sessionId, null);
  }

  models(): string[] {
    return this.local.models();
  }

  snapshot(): FleetSnapshot {
    return this.local.snapshot();
  }

  /** A sticky policy placed or moved a session outside a claim (a move, or the store was down). */
  private sessionPlaced(pool: string, sessionId: string, workerId: string): void {
    if (this.claiming.has(`${pool}\0${sessionId}`)) return;
    this.sync.sessionMoved(pool, sessionId, workerId);
  }
}
