/**
 * The policy interface. A policy instance belongs to one pool (one model, one role) and only
 * chooses among the eligible candidates it is given; the fleet owns leases and load.
 */
import type { Clock, Random } from '../deps.ts';
import type { AttemptOutcome, RouteInput } from '../fleet/fleet-api.ts';

/** What a policy may read about a worker. */
export interface PolicyWorker {
  readonly id: string;
  readonly url: string;
  /** Requests in flight on this worker (live, from leases). */
  readonly load: number;
  /** Requests routed to it since it joined. */
  readonly processed: number;
}

export interface Policy {
  readonly name: string;
  /** True when the policy reads the routing text or keys, so the request body must be parsed for them. */
  readonly needsRequestText: boolean;
  /** Picks one of `candidates` (never empty, all eligible and not excluded), or undefined to refuse. */
  select(candidates: readonly PolicyWorker[], input: RouteInput): PolicyWorker | undefined;
  onSettle?(worker: PolicyWorker, outcome: AttemptOutcome): void;
  onWorkerRemoved?(workerId: string): void;
  reset?(): void;
}

export interface PolicyContext {
  clock: Clock;
  random: Random;
}
