// Public types of the simulated vLLM engine. Runtime-agnostic: Web APIs and hono types only.
import type { Context, Hono } from 'hono';

export type FailureMode = 'none' | 'status' | 'hang' | 'reset' | 'midstream' | 'stall';

/**
 * Which inference requests fail, and how. Selection: `first` > 0 fails the first N inference
 * requests after the plan was set; otherwise `rate` fails that seeded fraction; with neither set,
 * every inference request fails. `mode: 'none'` never fails.
 * Modes: 'status' answers `status`; 'hang' accepts the request and never answers; 'reset' resets
 * the connection; 'midstream' starts a 200 and cuts the connection mid-body; 'stall' starts a 200
 * as usual (headers; a JSON body's full content-length), then sends nothing more (SSE: after
 * `cutAfterChunks` token chunks, default 0) until the client goes away.
 */
export interface FailurePlan {
  mode: FailureMode;
  /** Status for mode 'status' (default 503). */
  status?: number;
  /** Fraction 0..1 of inference requests that fail (seeded PRNG, see `seed`). */
  rate?: number;
  /** The first N inference requests fail (takes precedence over `rate`). */
  first?: number;
  /** `Retry-After` header value sent with status failures. */
  retryAfter?: string;
  /** Exact body of status failures (instead of the OpenAI-shaped error). */
  body?: string;
  /**
   * Token chunks sent before the cut (midstream; default: half the tokens, at least 1) or before the
   * stall (stall, SSE only; default 0).
   */
  cutAfterChunks?: number;
}

/** Resolves after `ms`, or as soon as `signal` aborts (it never rejects). */
export type SimSleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** A hook that acts on the connection carrying the request in `c` (the runner supplies it). */
export type ConnectionHook = (c: Context) => void;

export interface SimOptions {
  /** Sent back as `x-sim-engine`. Default `sim-<random>`. */
  id: string;
  /** Served model names; the first is the default for requests without `model`. */
  models: string[];
  /** Tokens the "model" produces before EOS; `max_tokens` caps it (finish_reason "length"). */
  tokens: number;
  /** Base time to first token. */
  ttftMs: number;
  /** Inter-token latency (streaming and non-streaming alike). */
  itlMs: number;
  /** Extra TTFT per uncached prompt block. */
  blockMs: number;
  /** Prompt block size in characters (64). */
  blockChars: number;
  /** LRU capacity of the prefix cache in blocks; 0 disables caching. */
  cacheBlocks: number;
  /** At most N requests run at once (the rest wait); 0 = unlimited. */
  maxRunning: number;
  /** Reported by /v1/models. */
  maxModelLen: number;
  /** Data-parallel ranks reported by the Mooncake bootstrap `/query`. */
  dpSize: number;
  /** GET /health answers 503. */
  unhealthy: boolean;
  /** Seed of the failure PRNG. */
  seed: number;
  /** Entries kept per request log (ring); 0 disables logging. */
  logSize: number;
  failure: FailurePlan;
  /**
   * Mooncake decode: wait up to this long (ms) for the prefill engine named by
   * `remote_bootstrap_addr` to finish the transfer (`/sim/kv/<id>`) before generating; 0 = do not
   * wait (the KV is taken as there).
   */
  kvWaitMs: number;
  /**
   * PD prefill: answer a `do_remote_decode` request without `kv_transfer_params`, as an engine
   * without a working KV connector does (the decode then prefills locally).
   */
  omitKvParams: boolean;
  /** Mooncake bootstrap: the first N `/query` requests answer 503 (a server still starting). */
  queryFailFirst: number;
  /** Side channel reported in PD `kv_transfer_params`. */
  kvHost: string;
  kvPort: number;
  sleep: SimSleep;
  /** Monotonic milliseconds for token deadlines (default `performance.now`; tests may freeze it). */
  now?: () => number;
  /** Abort the connection at once (a TCP reset). Without it `fetch` rejects with a TypeError. */
  resetConnection?: ConnectionHook;
  /**
   * Cut the connection after the bytes already handed over are flushed (midstream failures).
   * Without it the response body stream errors, which a server turns into a cut connection.
   */
  cutConnection?: ConnectionHook;
}

export type SimLogKind = 'inference' | 'probe';

export interface SimLogEntry {
  seq: number;
  /** 'inference' for inference POSTs; 'probe' for /health, /v1/models, /metrics, flushes, ... */
  kind: SimLogKind;
  /** performance.timeOrigin + performance.now() when the request arrived (float ms). */
  tMs: number;
  method: string;
  path: string;
  /** All request headers, names lowercased. */
  headers: Record<string, string>;
  /** Parsed JSON body, or null (no body, or malformed). */
  body: unknown;
  /** Response status, or null while pending and when no response was sent (hang, reset). */
  status: number | null;
  /** True once the whole response was handed over; false if aborted, reset or cut. */
  completed: boolean;
  /** True when the client went away before the end. */
  aborted: boolean;
  /** When the response ended (or the client left); null while in progress. */
  tEndMs: number | null;
  /** Token chunks (SSE) or tokens (JSON) delivered. */
  tokensSent: number;
  /** The failure injected into this request, if any. */
  injected: Exclude<FailureMode, 'none'> | null;
  /** Prefix cache: leading cached blocks and full blocks of the prompt (null when not looked up). */
  cachedBlocks: number | null;
  promptBlocks: number | null;
}

/** Counters, in the wire shape of GET /admin/stats. */
export interface SimStats {
  id: string;
  requests_total: number;
  success_total: number;
  failed_injected_total: number;
  aborted_total: number;
  running: number;
  waiting: number;
  prompt_tokens_total: number;
  generation_tokens_total: number;
  prefix_queries_blocks: number;
  prefix_hits_blocks: number;
  prefix_hit_rate: number;
  cache_size_blocks: number;
  streamed_total: number;
  health_probes_total: number;
  uptime_s: number;
}

export type SimConfig = Readonly<Omit<SimOptions, 'failure' | 'models'>> & {
  readonly failure: Readonly<FailurePlan>;
  readonly models: readonly string[];
};

export interface SimEngine {
  readonly id: string;
  readonly app: Hono;
  fetch(req: Request): Promise<Response>;
  /** Inference requests, oldest first (a snapshot array of live entries). */
  readonly log: readonly SimLogEntry[];
  /** Health checks and other non-inference, non-admin requests, oldest first. */
  readonly probeLog: readonly SimLogEntry[];
  readonly config: SimConfig;
  /** Change options at run time. Setting `failure` replaces the plan and restarts its counter. */
  configure(partial: Partial<SimOptions>): void;
  /** Zero counters, clear the prefix cache and the logs, restart the failure plan. Keeps options. */
  reset(): void;
  stats(): SimStats;
  /**
   * Resolves with the first entry (of `log`, or of `probeLog` with kind 'probe') that matches now
   * or when an entry is added or updated; rejects after `timeoutMs`.
   */
  waitForLog(
    predicate: (e: SimLogEntry) => boolean,
    timeoutMs?: number,
    kind?: SimLogKind,
  ): Promise<SimLogEntry>;
}
