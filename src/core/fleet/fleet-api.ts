/**
 * FleetApi: the seam between request handling and fleet state. The in-memory `Fleet` implements it
 * for Node and Deno; on Cloudflare Workers a Durable Object holds the same `Fleet` and isolates call
 * it by RPC. Every value crossing it is plain, serialisable data. Methods may answer synchronously
 * (in memory) or with a promise (RPC); callers always `await`.
 */

export type MaybePromise<T> = T | Promise<T>;

export type WorkerRole = 'regular' | 'prefill' | 'decode';

/** What an operator (flags, admin API) says about a worker. */
export interface WorkerSpec {
  url: string;
  role?: WorkerRole;
  /** Models served; omitted or empty = not known yet (learned from `/v1/models`; serves any model until then). */
  models?: string[];
  dpRank?: number;
  bootstrapPort?: number | null;
}

/** A worker as the fleet reports it. */
export interface WorkerInfo {
  id: string;
  url: string;
  role: WorkerRole;
  models: string[] | null;
  dpRank?: number;
  bootstrapPort?: number | null;
  healthy: boolean;
  draining: boolean;
  load: number;
  processed: number;
}

/** The routing input, extracted once per request. */
export interface RouteInput {
  model?: string;
  role?: WorkerRole;
  /** Worker ids this request must not use (transport failures on earlier attempts). */
  exclude?: readonly string[];
  /** Text used by content-aware policies (prompt / messages), when a policy needs it. */
  text?: string;
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
  addWorker(spec: WorkerSpec): MaybePromise<WorkerInfo>;
  /** Removes a worker; with requests in flight it drains first. Returns false if unknown. */
  removeWorker(id: string): MaybePromise<boolean>;
  /** Sets the models a worker serves (from its `/v1/models`). */
  setWorkerModels(id: string, models: string[]): MaybePromise<void>;
  /** Records a health verdict for a worker. */
  setWorkerHealth(id: string, healthy: boolean): MaybePromise<void>;
  /** Forgets a sticky session in every pool (idempotent). */
  finishSession(sessionId: string): MaybePromise<void>;
  /** Union of the served models (OpenAI list order: first seen first). */
  models(): MaybePromise<string[]>;
  snapshot(): MaybePromise<FleetSnapshot>;
}
