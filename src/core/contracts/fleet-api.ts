/**
 * FleetApi: the seam between request handling and fleet state. The in-memory `Fleet` implements it
 * for Node and Deno; on Cloudflare Workers a Durable Object holds the same `Fleet` and isolates call
 * it by RPC. Every value crossing it is plain, serialisable data. Methods may answer synchronously
 * (in memory) or with a promise (RPC, a native `Promise`); the request path awaits only a promise,
 * so an in-memory answer costs no microtask.
 */

import type { RouterConfig } from '../config/schema.ts';
import type { RoutingText } from './routing-text.ts';

export type MaybePromise<T> = T | Promise<T>;

/** Adding a worker whose id is already registered. */
export class WorkerConflictError extends Error {}

export type WorkerRole = 'regular' | 'prefill' | 'decode';

/** Per-worker settings that override the global ones (admin API). */
export interface WorkerOverrides {
  /** Higher first: traffic goes to the highest-priority tier that has an available worker. */
  priority?: number;
  circuitBreaker?: Partial<RouterConfig['circuitBreaker']>;
  retry?: Partial<RouterConfig['retry']>;
}

/** Where a discovered worker came from (shown by the admin API). */
export interface WorkerSource {
  discovery: 'kubernetes' | 'p2p-nccl';
  /** Kubernetes: the pod's name, UID and namespace. */
  pod?: string;
  uid?: string;
  namespace?: string;
}

/** What an operator (flags, admin API) or discovery says about a worker. */
export interface WorkerSpec extends WorkerOverrides {
  url: string;
  role?: WorkerRole;
  /** Models served; omitted or empty = not known yet (learned from `/v1/models`; serves any model until then). */
  models?: string[];
  dpRank?: number;
  bootstrapPort?: number | null;
  /** Set by discovery. */
  source?: WorkerSource;
  /** Takes no new requests until resumed (a discovered pod that is not Ready). */
  suspended?: boolean;
}

/** A change to a worker's models or overrides (PUT /workers/{id}); `null` clears an override. */
export interface WorkerPatch {
  /** Discovery: stop (true) or resume (false) sending new requests; requests in flight go on. */
  suspended?: boolean;
  models?: string[] | null;
  priority?: number | null;
  circuitBreaker?: Partial<RouterConfig['circuitBreaker']> | null;
  retry?: Partial<RouterConfig['retry']> | null;
}

/** One health probe's result for a base URL (every DP rank behind it shares it). */
export interface ProbeReport {
  url: string;
  ok: boolean;
  error?: string;
  /** Models the engine listed, when they were read. */
  models?: string[];
}

/** A worker as the fleet reports it. */
export interface WorkerInfo extends WorkerOverrides {
  id: string;
  url: string;
  role: WorkerRole;
  models: string[] | null;
  dpRank?: number;
  bootstrapPort?: number | null;
  source?: WorkerSource;
  healthy: boolean;
  draining: boolean;
  /** Discovery holds new requests off it (its pod is not Ready). */
  suspended?: boolean;
  /** Circuit breaker state. */
  circuit: 'closed' | 'open' | 'half_open';
  load: number;
  processed: number;
}

/** The routing input, extracted once per request. */
export interface RouteInput {
  model?: string;
  role?: WorkerRole;
  /** Worker ids this request must not use (transport failures on earlier attempts). */
  exclude?: readonly string[];
  /**
   * Worker ids this request should avoid (they answered a retryable or capacity status on an earlier
   * attempt): chosen only when no other worker is available.
   */
  avoid?: readonly string[];
  /** The request streams its answer (latency is compared within the same class). */
  stream?: boolean;
  /** Text used by content-aware policies (prompt / messages), when a policy needs it: its parts, unjoined. */
  text?: RoutingText;
  /** Key for the hashing policies: session/user/tenant/correlation/request/trace headers, then body fields. */
  routingKey?: string;
  /** Stable session id for the sticky policies: session/user/tenant/correlation headers, then body fields. */
  sessionId?: string;
}

/** The worker a request was routed to, with what the proxy needs to reach it. */
export interface RoutedWorker {
  id: string;
  url: string;
  dpRank?: number;
  /** A prefill worker's bootstrap port (Mooncake), when it has one. */
  bootstrapPort?: number | null;
  /** The worker's retry overrides, applied to failures on it. */
  retry?: Partial<RouterConfig['retry']>;
}

export type RouteResult =
  | { ok: true; worker: RoutedWorker; lease: number }
  | { ok: false; code: 'model_not_found' | 'no_available_workers'; models: string[] };

/**
 * How an attempt ended, as far as the worker is concerned.
 * success: it answered (any non-retryable status); failure: transport error or retryable status;
 * neutral: capacity status (429), counts as neither; aborted: the client left.
 */
export interface AttemptOutcome {
  kind: 'success' | 'failure' | 'neutral' | 'aborted';
  status?: number;
  /** The engine asked for a pause (`Retry-After`), in ms: keep new requests off it that long. */
  retryAfterMs?: number;
  /** Milliseconds from sending the attempt to its first response byte (the whole body when buffered). */
  firstByteMs?: number;
  /**
   * The worker is not delivering: the attempt was abandoned because its worker made no progress
   * while other workers did, or its answer broke off after the status. Keep new requests off it a while.
   */
  stalled?: boolean;
}

export interface FleetSnapshot {
  workers: WorkerInfo[];
  models: string[];
}

export interface FleetApi {
  /** Picks a worker and takes a load lease on it. */
  route(input: RouteInput): MaybePromise<RouteResult>;
  /** Releases a lease and records the outcome. Settling twice is a no-op that returns false. */
  settle(lease: number, outcome: AttemptOutcome): MaybePromise<boolean>;
  listWorkers(): MaybePromise<WorkerInfo[]>;
  getWorker(id: string): MaybePromise<WorkerInfo | undefined>;
  /** Adds a worker; throws WorkerConflictError when its id exists. */
  addWorker(spec: WorkerSpec): MaybePromise<WorkerInfo>;
  /** Changes a worker's models or overrides; undefined when unknown. */
  updateWorker(id: string, patch: WorkerPatch): MaybePromise<WorkerInfo | undefined>;
  /** Records health probe results (by base URL) and the models the engines listed. */
  recordProbes(reports: ProbeReport[]): MaybePromise<void>;
  /** Removes a worker; with requests in flight it drains first. Returns false if unknown. */
  removeWorker(id: string): MaybePromise<boolean>;
  /** Sets the models a worker serves (from its `/v1/models`). */
  setWorkerModels(id: string, models: string[]): MaybePromise<void>;
  /** Forgets a sticky session in every pool (idempotent). */
  finishSession(sessionId: string): MaybePromise<void>;
  /** Union of the served models (OpenAI list order: first seen first). */
  models(): MaybePromise<string[]>;
  snapshot(): MaybePromise<FleetSnapshot>;
}
