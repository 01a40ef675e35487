/**
 * The policy interface. A policy instance belongs to one pool (one model, one role) and only
 * chooses among the eligible candidates it is given; the fleet owns leases and load.
 */
import type { RouterConfig } from '../config/schema.ts';
import type { AttemptOutcome, RouteInput } from '../contracts/fleet-api.ts';
import type { Clock, Random } from '../contracts/runtime.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';

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
  /** Picks one of `candidates` (never empty, all eligible and not excluded), or undefined to refuse. */
  select(candidates: readonly PolicyWorker[], input: RouteInput): PolicyWorker | undefined;
  /** A request this policy picked `worker` for was dispatched (its lease was taken). */
  onDispatch?(worker: PolicyWorker, input: RouteInput): void;
  /** A request routed by this policy ended (its lease was released or expired). */
  onSettle?(worker: PolicyWorker, outcome: AttemptOutcome, input: { sessionId?: string }): void;
  /** A worker left the pool for good (removed); unhealthy workers simply stop being candidates. */
  onWorkerRemoved?(workerId: string): void;
  /** `POST /finish_session`: forget this session (idempotent). */
  finishSession?(sessionId: string): void;
  /** Session policies: this instance holds the session (placed here or adopted). */
  knowsSession?(sessionId: string): boolean;
  /** Session policies: another router replica placed the session on `workerId`. */
  adoptSession?(sessionId: string, workerId: string): void;
  /** cache_aware: another router replica sent `text` to `workerId` (it is likely in that cache). */
  recordPrefix?(text: string, workerId: string): void;
  reset?(): void;
  /** State worth keeping across a restart (sticky sessions), as plain JSON; trees are rebuilt instead. */
  snapshot?(): unknown;
  /** Loads what `snapshot` returned (after a restart). */
  restore?(state: unknown): void;
}

/** What a policy reads from the request, so the router parses only what the configured policies need. */
export interface PolicyNeeds {
  text: boolean;
  routingKey: boolean;
  sessionId: boolean;
}

/**
 * State every policy instance of one router shares (one per Fleet, never module-global): the
 * sticky_least_loaded limit of one voluntary move per interval across all pools.
 */
export interface SharedPolicyState {
  /** When any instance last moved a session to rebalance (clock ms). */
  lastRebalanceAt: number;
}

export function createSharedPolicyState(): SharedPolicyState {
  return { lastRebalanceAt: Number.NEGATIVE_INFINITY };
}

export interface PolicyContext {
  clock: Clock;
  random: Random;
  /** --cache-threshold, --balance-*, --eviction-interval, --max-tree-size, --session-key. */
  settings: Readonly<RouterConfig['policy']>;
  /** The VLLM_ROUTER_SLL_* settings. */
  sll: Readonly<RouterConfig['sll']>;
  /** Registry for the policy's metrics (registering the same name twice returns the same family). */
  metrics: MetricsRegistry;
  /** The pool this instance serves, for metric labels (`<role>:<model>`). */
  pool: string;
  /** Shared by every instance of the router (the Fleet fills it in); absent: the instance's own. */
  shared?: SharedPolicyState;
  /** Told of the placements this instance makes, for router replicas sharing a store (fleet-sharing.ts). */
  sharing?: PolicySharing;
}

/** What a policy instance reports of its own placements (never of adopted ones). */
export interface PolicySharing {
  /** A session policy of pool `pool` placed a session on a worker or moved it there. */
  sessionPlaced(pool: string, sessionId: string, workerId: string): void;
  /** `cache_aware` in pool `pool` sent `text` to a worker (it is now likely in that engine's cache). */
  prefixRecorded(pool: string, text: string, workerId: string): void;
}
