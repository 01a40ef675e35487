/**
 * Applies pod events to the fleet (k8s-pods.ts says what they mean). Workers are owned by pod UID:
 * discovery only ever suspends, resumes or removes a worker whose source names the pod's UID, so a
 * worker added by the flags or the admin API is never touched, even at the same URL. A pod whose URL
 * is taken waits (logged once): when the worker there is a removed pod's, still draining, or an
 * operator's that is removed later, a retry adds it.
 */
import type { WorkerInfo, WorkerPatch, WorkerRole, WorkerSpec } from '../../core/contracts/fleet-api.ts';
import type { Fleet } from '../../core/fleet/fleet.ts';
import { expandDataParallel, workerId } from '../../core/fleet/workers.ts';
import type { Logger } from '../../core/observability/logger.ts';
import {
  type PodAction,
  type PodEventType,
  type PodIdentity,
  type PodLike,
  type PodRules,
  podIdentity,
  reconcilePod,
  type Tracked,
} from './k8s-pods.ts';

/** What applying pod events needs of the router. */
export interface PodWorkersSide {
  fleet: Pick<Fleet, 'addWorker' | 'removeWorker' | 'updateWorker' | 'getWorker'>;
  logger: Logger;
  /** Probes the given base URLs at once (health and /v1/models). */
  refreshWorkers(only?: readonly string[]): Promise<void>;
}

interface Entry {
  pod: PodIdentity;
  tracked: Tracked;
  /** The workers added for this pod (one per data-parallel rank); empty while its URL is taken. */
  ids: string[];
}

export class PodWorkers {
  private readonly entries = new Map<string, Entry>();
  /** `namespace/name` → UID: a pod re-created under the same name replaces the old one. */
  private readonly byName = new Map<string, string>();
  /** Notes already logged, per pod UID (an invalid annotation, a pod that has no role). */
  private readonly noted = new Map<string, Set<string>>();
  /** Per pod UID, the worker last found holding its URL (logged when it changes). */
  private readonly blocked = new Map<string, string>();

  constructor(
    private readonly side: PodWorkersSide,
    private readonly rules: PodRules,
    private readonly dpSize = 1,
  ) {}

  /** One ADDED / MODIFIED / DELETED event (from the list or the watch). */
  handle(type: PodEventType, pod: PodLike): void {
    const id = podIdentity(pod);
    if (!id) return;
    const key = `${id.namespace}/${id.name}`;
    const before = this.byName.get(key);
    if (before !== undefined && before !== id.uid)
      this.drop(before, 'replaced by a new pod of the same name');
    const entry = this.entries.get(id.uid);
    // Waiting entries added nothing yet; workers the admin API removed are re-added while the pod serves.
    const prev = entry?.ids.some((w) => this.owns(w, id.uid)) ? entry.tracked : undefined;
    const r = reconcilePod(prev, type, pod, this.rules);
    this.note(id, r.notes);
    const state = { ids: prev ? (entry?.ids ?? []) : [] };
    for (const action of r.actions) {
      const spec = action.kind === 'remove' ? entry?.tracked.spec : (r.next?.spec ?? entry?.tracked.spec);
      this.apply(action, id, spec, state);
    }
    if (r.next === undefined) {
      this.entries.delete(id.uid);
      if (this.byName.get(key) === id.uid) this.byName.delete(key);
      if (type === 'DELETED') this.forgetNotes(id.uid);
      return;
    }
    this.entries.set(id.uid, { pod: id, tracked: r.next, ids: state.ids });
    this.byName.set(key, id.uid);
  }

  private apply(
    action: PodAction,
    id: PodIdentity,
    spec: WorkerSpec | undefined,
    state: { ids: string[] },
  ): void {
    const fields = { ...this.fields(id, spec?.url, spec?.role), workers: state.ids };
    const patch = (p: WorkerPatch) => {
      for (const w of state.ids) if (this.owns(w, id.uid)) this.side.fleet.updateWorker(w, p);
    };
    switch (action.kind) {
      case 'remove':
        this.removeIds(state.ids, id.uid);
        this.side.logger.info('discovered pod removed: its workers drain', {
          ...fields,
          reason: action.reason,
        });
        state.ids = [];
        return;
      case 'add':
        state.ids = this.tryAdd(id, { spec: action.spec, suspended: false });
        return;
      case 'suspend':
        patch({ suspended: true });
        this.side.logger.info('discovered pod not ready: no new requests', fields);
        return;
      case 'resume':
        patch({ suspended: false });
        this.side.logger.info('discovered pod ready again', fields);
        return;
      case 'models':
        patch({ models: action.models });
        return;
    }
  }

  /** Retries the pods whose URL was taken. Returns how many still wait. */
  retryWaiting(): number {
    let waiting = 0;
    for (const entry of this.entries.values()) {
      if (entry.ids.length > 0) continue;
      entry.ids = this.tryAdd(entry.pod, entry.tracked);
      if (entry.ids.length === 0) waiting++;
    }
    return waiting;
  }

  get waiting(): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.ids.length === 0) n++;
    return n;
  }

  /** Workers added and not removed (data-parallel ranks counted one by one), by role. */
  countByRole(): Map<WorkerRole, number> {
    const out = new Map<WorkerRole, number>();
    for (const e of this.entries.values()) {
      const role = e.tracked.spec.role ?? 'regular';
      out.set(role, (out.get(role) ?? 0) + e.ids.length);
    }
    return out;
  }

  /** The worker is there, not draining, and was added for this pod (its source names the UID). */
  private owns(workerId: string, uid: string): boolean {
    const w: WorkerInfo | undefined = this.side.fleet.getWorker(workerId);
    return w !== undefined && !w.draining && w.source?.discovery === 'kubernetes' && w.source.uid === uid;
  }

  private removeIds(ids: readonly string[], uid: string): void {
    for (const w of ids) if (this.owns(w, uid)) this.side.fleet.removeWorker(w);
  }

  /** Removes what a pod that is gone (replaced under its name) had added. */
  private drop(uid: string, reason: string): void {
    const entry = this.entries.get(uid);
    this.entries.delete(uid);
    this.forgetNotes(uid);
    if (!entry || entry.ids.length === 0) return;
    this.removeIds(entry.ids, uid);
    const { spec } = entry.tracked;
    this.side.logger.info('discovered pod removed: its workers drain', {
      ...this.fields(entry.pod, spec.url, spec.role),
      workers: entry.ids,
      reason,
    });
  }

  /** Adds the pod's workers unless its URL is taken; returns their ids (none when taken). */
  private tryAdd(pod: PodIdentity, tracked: Tracked): string[] {
    const { url } = tracked.spec;
    const specs = expandDataParallel(tracked.spec, this.dpSize);
    const taken = specs.map((s) => workerId(url, s.dpRank)).find((w) => this.side.fleet.getWorker(w));
    const fields = this.fields(pod, url, tracked.spec.role);
    if (taken !== undefined) {
      const holder = this.side.fleet.getWorker(taken);
      const by =
        holder?.source?.discovery === 'kubernetes' ? `pod ${holder.source.pod ?? '?'}` : 'not discovered';
      const blockedBy = `${taken} (${by}${holder?.draining ? ', draining' : ''})`;
      if (blockedBy !== this.blocked.get(pod.uid)) {
        this.blocked.set(pod.uid, blockedBy);
        this.side.logger.warn('discovered pod not added: its URL is a worker not added for this pod', {
          ...fields,
          held_by: blockedBy,
        });
      }
      return [];
    }
    this.blocked.delete(pod.uid);
    const ids = specs.map((s) => this.side.fleet.addWorker(s).id);
    if (tracked.suspended) for (const w of ids) this.side.fleet.updateWorker(w, { suspended: true });
    this.side.logger.info('discovered pod added', {
      ...fields,
      workers: ids,
      ...(tracked.spec.bootstrapPort == null ? {} : { bootstrap_port: tracked.spec.bootstrapPort }),
    });
    this.side
      .refreshWorkers([url])
      .catch((err: unknown) => this.side.logger.warn('probing a discovered pod failed', { url, error: err }));
    return ids;
  }

  private forgetNotes(uid: string): void {
    this.noted.delete(uid);
    this.blocked.delete(uid);
  }

  private note(pod: PodIdentity, notes: readonly string[]): void {
    if (notes.length === 0) return;
    const seen = this.noted.get(pod.uid) ?? new Set<string>();
    this.noted.set(pod.uid, seen);
    for (const n of notes) {
      if (seen.has(n)) continue;
      seen.add(n);
      this.side.logger.warn(`discovered pod: ${n}`, this.fields(pod));
    }
  }

  private fields(pod: PodIdentity, url?: string, role?: WorkerRole) {
    return {
      pod: pod.name,
      uid: pod.uid,
      namespace: pod.namespace,
      ...(url === undefined ? {} : { url }),
      ...(role === undefined ? {} : { role }),
    };
  }
}
