/**
 * SharedStore: what router replicas on Node and Deno share through a distributed store
 * (`--state-store redis://…`; the Redis implementation lives in src/adapters/redis/). The core's
 * SharedFleet keeps every routing decision local and uses the store to converge: the registry and
 * its admin changes, breaker and health verdicts, sticky-session placement (atomic), per-replica
 * load that expires with its replica, and the compact prefix placements `cache_aware` needs.
 *
 * Every method may fail or time out (the store is down or slow): callers degrade to local state.
 * Values are plain JSON. Pools are the fleet's pool keys (`<role>:<model>`).
 */
import type { WorkerSpec } from './fleet-api.ts';

/** A worker as the registry holds it: what operators and discovery decide, not what traffic changes. */
export interface SharedWorker {
  id: string;
  /** Identity and overrides, as `addWorker` takes them (suspended included). */
  spec: WorkerSpec;
  models: string[] | null;
  /** The models were set by configuration or the admin API (not learned from `/v1/models`). */
  modelsStatic: boolean;
  draining: boolean;
}

/** One replica's word on a worker: its health verdict and its breaker's state. */
export interface SharedVerdict {
  healthy?: boolean;
  circuit?: { state: 'closed' | 'open' | 'half_open'; openedAt?: number };
  /** Wall-clock ms when the replica observed it (the newest verdict wins). */
  at: number;
}

export type SharedEvent =
  /** The registry changed: re-read it. */
  | { type: 'registry' }
  | { type: 'verdict'; workerId: string; verdict: SharedVerdict }
  /** A session was placed on or moved to `workerId`; null: finished (every pool). */
  | { type: 'session'; pool: string; sessionId: string; workerId: string | null }
  /** `cache_aware` sent `text` (a compact routing text) to `workerId` in `pool`. */
  | { type: 'prefix'; pool: string; text: string; workerId: string };

export interface SharedEventBatch {
  /** The replica that published it. */
  from: string;
  events: SharedEvent[];
}

export interface SharedSubscription {
  stop(): void;
}

export interface SharedSubscriber {
  /** Events published by other replicas, in the order the store keeps them. */
  onEvents(batch: SharedEventBatch): void;
  /**
   * Events may have been missed (the subscription was cut longer than the store keeps history, or
   * it just started): re-read the registry and verdicts.
   */
  onGap(): void;
  /** The store connection went down (false) or came back (true). */
  onConnection?(connected: boolean): void;
}

export interface SharedStore {
  /** This replica's id (unique per process). */
  readonly replicaId: string;
  /** Where the store is, with any password masked (for logs and /health). */
  readonly displayUrl: string;

  // Registry (field per worker, so concurrent changes to different workers never overwrite each other).
  readRegistry(): Promise<SharedWorker[]>;
  /** Writes a worker; with `onlyIfAbsent`, only when no entry has its id (true when written). */
  putWorker(worker: SharedWorker, onlyIfAbsent?: boolean): Promise<boolean>;
  deleteWorker(id: string): Promise<void>;
  /** The worker ids the fleet's configuration listed, as the last replica with a changed list wrote them. */
  readConfigured(): Promise<string[] | undefined>;
  writeConfigured(ids: readonly string[]): Promise<void>;

  // Verdicts (field per worker; the newest `at` wins on read).
  readVerdicts(): Promise<Record<string, SharedVerdict>>;
  putVerdict(workerId: string, verdict: SharedVerdict): Promise<void>;

  // Sticky sessions: one entry per session id holding its worker per pool, expiring after `ttlMs` untouched.
  sessionOwner(pool: string, sessionId: string): Promise<string | undefined>;
  /** Atomic: places the session on `workerId` unless a replica already did; answers the owner. */
  claimSession(pool: string, sessionId: string, workerId: string, ttlMs: number): Promise<string>;
  /** Overwrites the placement (the policy moved the session). */
  moveSession(pool: string, sessionId: string, workerId: string, ttlMs: number): Promise<void>;
  /** Pushes the expiry of sessions that had requests (batched by the caller). */
  touchSessions(sessionIds: readonly string[], ttlMs: number): Promise<void>;
  /** Forgets the session in every pool. */
  finishSession(sessionId: string): Promise<void>;

  // Load: this replica's in-flight count per worker, expiring `ttlMs` after the last report.
  reportLoad(load: Record<string, number>, ttlMs: number): Promise<void>;
  /** In-flight counts per worker summed over the other live replicas. */
  readRemoteLoad(): Promise<Record<string, number>>;

  // Events.
  publish(events: readonly SharedEvent[]): Promise<void>;
  /** Delivers other replicas' events from now on (history older than the subscription is skipped). */
  subscribe(subscriber: SharedSubscriber): SharedSubscription;
  /** The newest `limit` batches any replica published, oldest first (a starting replica warms up on them). */
  recentEvents(limit: number): Promise<SharedEventBatch[]>;
  /** Round trip to the store, in ms (throws when it is unreachable). */
  ping(): Promise<number>;
  close(): Promise<void>;
}
