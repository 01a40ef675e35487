/**
 * Load leases: taken when a request is dispatched to a worker, released exactly once when its
 * response ends, errors or is cancelled. An optional TTL lets a fleet reclaim the leases of a
 * caller that vanished (a Workers isolate); in-process callers always settle.
 */
import { IdTable } from './id-table.ts';
import type { WorkerRecord } from './workers.ts';

export interface Lease {
  readonly worker: WorkerRecord;
  readonly poolKey: string;
  readonly expiresAt: number;
  /** Admitted as a half-open breaker probe, and the breaker generation at admission. */
  readonly probe: boolean;
  readonly generation: number;
  /** The request's class (from RouteInput.stream), for its latency sample. */
  readonly stream: boolean;
  /** When it was routed (the fleet clock's `now`). */
  readonly routedAt: number;
  /** The request's session id, for the session policies' in-flight count. */
  readonly sessionId?: string;
}

/** One lease as the table holds it: built field by field (an object spread copies property by property). */
class HeldLease implements Lease {
  readonly probe: boolean;
  readonly generation: number;
  readonly stream: boolean;
  readonly routedAt: number;
  readonly sessionId?: string;

  constructor(
    readonly worker: WorkerRecord,
    readonly poolKey: string,
    readonly expiresAt: number,
    gate: { probe: boolean; generation: number },
    attempt: { stream: boolean; routedAt: number; sessionId?: string },
  ) {
    this.probe = gate.probe;
    this.generation = gate.generation;
    this.stream = attempt.stream;
    this.routedAt = attempt.routedAt;
    if (attempt.sessionId !== undefined) this.sessionId = attempt.sessionId;
  }
}

/** The leases held, by number (id-table.ts says why not a Map). */
export class LeaseTable {
  private readonly leases = new IdTable<Lease>();
  private nextId = 1;

  get size(): number {
    return this.leases.size;
  }

  take(
    worker: WorkerRecord,
    poolKey: string,
    expiresAt: number,
    gate: { probe: boolean; generation: number },
    attempt: { stream: boolean; routedAt: number; sessionId?: string },
  ): number {
    const id = this.nextId++;
    this.leases.add(id, new HeldLease(worker, poolKey, expiresAt, gate, attempt));
    worker.load++;
    worker.ownLoad++;
    worker.processed++;
    return id;
  }

  /** Releases a lease; undefined if it was already released (or never existed). */
  release(id: number): Lease | undefined {
    const lease = this.leases.delete(id);
    if (!lease) return undefined;
    lease.worker.load--;
    lease.worker.ownLoad--;
    return lease;
  }

  /** Releases every lease whose expiry has passed; returns them. */
  expire(now: number): Lease[] {
    const expired: Lease[] = [];
    for (const [id, lease] of this.leases.entries()) {
      if (lease.expiresAt <= now) {
        this.release(id);
        expired.push(lease);
      }
    }
    return expired;
  }
}
