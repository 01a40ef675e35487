/** What the pipeline needs: the host's dependencies, the app's shared context and one client request. */
import type { RouterConfig } from '../config/schema.ts';
import type { RouterError } from '../contracts/errors.ts';
import type { FleetApi } from '../contracts/fleet-api.ts';
import type { Clock, Random, Reports } from '../contracts/runtime.ts';
import type { Upstream } from '../contracts/upstream.ts';
import type { MooncakeBootstrap } from '../fleet/mooncake-bootstrap.ts';
import { type TrustedProxies, trustedProxies } from '../observability/client-address.ts';
import { createInstruments, type Instruments } from '../observability/instruments.ts';
import type { Logger } from '../observability/logger.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import { ModelLabels } from '../observability/model-labels.ts';
import type { Observations } from '../observability/observations.ts';
import type { RetrySettings } from '../resilience/backoff.ts';
import type { StatusClasses } from '../resilience/classify.ts';
import { RetryBudget } from '../resilience/retry-budget.ts';
import { DueList, type Expiring } from './due-list.ts';
import type { InFlight } from './in-flight.ts';
import type { JsonObject } from './pd-bodies.ts';
import type { PdConnector, PdContext } from './pd-context.ts';
import { createPdInstruments } from './pd-metrics.ts';
import type { RequestInfo } from './request-info.ts';
import { StallWatch, stallSettings } from './stall-watch.ts';

/** What the core needs from its host: time, randomness, the upstream transport, fleet state, logs, metrics. */
/**
 * What the exchange watches of the client's connection. The request's AbortSignal fits; the Node
 * host gives a lighter one over its response object, so no AbortController is made per request.
 */
export interface ClientLink {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export interface RouterDeps {
  clock: Clock;
  random: Random;
  /** Fresh request ids (a separate source, so ids never shift the random draws of backoff jitter). */
  newId: () => string;
  upstream: Upstream;
  fleet: FleetApi;
  logger: Logger;
  metrics: MetricsRegistry;
  /** The requests in flight, cut when the router shuts down (the grace period ran out). */
  inFlight?: InFlight;
  /** Prefill/decode helpers the host holds: Mooncake's bootstrap ids, P2P-NCCL's registered ZMQ addresses. */
  pd?: { bootstrap?: MooncakeBootstrap; zmqAddress?: (url: string) => string | undefined };
  /** Told of every finished request (observations.ts). */
  observations?: Observations;
  /** Runs finished requests' reports after the host's I/O turn (contracts/runtime.ts); else at once. */
  reports?: Reports;
}

export interface PipelineContext {
  deps: RouterDeps;
  instruments: Instruments;
  classes: StatusClasses;
  retry: RetrySettings;
  budget: RetryBudget;
  timeoutMs: number;
  /** Tracks every attempt's progress; routes around and abandons stuck engines. */
  stalls: StallWatch;
  /** Longest silence between the chunks of a started answer (ms, 0 = off), streaming and not. */
  idleTimeoutMs: { stream: number; plain: number };
  /**
   * Watches every relayed answer's idle limit with one timer, on a host whose requests share one
   * (the one with a list of requests in flight); without it each answer has a timer of its own.
   */
  idleWatch?: DueList<Expiring>;
  /** Bearer sent to engines (--api-key); otherwise none: the client's Authorization is never forwarded. */
  apiKey?: string;
  /** Name the answering worker in x-routed-worker-id and x-smg-routed-worker-id (off: --no-routed-worker-header). */
  routedWorkerHeader: boolean;
  /** Prefill/decode disaggregation, when it is on. */
  pd?: PdContext;
  /** The bounded `model` label of the request metrics. */
  models: ModelLabels;
  /** --trusted-proxies: whose X-Forwarded-For names the client in the request log. */
  trustedProxies: TrustedProxies;
}

/** The pipeline's shared context for a config: status classes, retry budget, limits, the stall watch. */
export function createPipelineContext(config: RouterConfig, deps: RouterDeps): PipelineContext {
  const { budgetRatio: ratio, budgetMinPerSec: minPerSec } = config.retry;
  const budget = new RetryBudget({ ratio, minPerSec }, deps.clock);
  budget.exportGauge(deps.metrics);
  return {
    deps,
    instruments: createInstruments(deps.metrics),
    classes: {
      retryable: new Set(config.retry.retryableStatusCodes),
      capacity: new Set(config.circuitBreaker.capacityStatusCodes),
    },
    retry: config.retry,
    budget,
    models: new ModelLabels(() => deps.fleet.models()),
    trustedProxies: trustedProxies(config.server.trustedProxies),
    timeoutMs: config.server.requestTimeoutSecs * 1000,
    stalls: new StallWatch(deps.clock, stallSettings(config), otherWorkerCheck(deps.fleet)),
    idleTimeoutMs: {
      stream: config.attempt.streamIdleTimeoutSecs * 1000,
      plain: config.attempt.idleTimeoutSecs * 1000,
    },
    routedWorkerHeader: config.server.routedWorkerHeader,
    ...(deps.inFlight ? { idleWatch: new DueList(deps.clock, { watchdog: true }) } : {}),
    ...(config.pd.enabled ? { pd: pdContext(config, deps) } : {}),
    ...(config.workers.apiKey === undefined ? {} : { apiKey: config.workers.apiKey }),
  };
}

/**
 * Whether the fleet holds a worker besides `id`, of its role, that could take an attempt now (not
 * down, draining, held off or with an open breaker). A fleet that answers asynchronously (a
 * Durable Object) is asked once: its answer is a promise, which is dropped, and from then on the
 * check says true without asking (a canary is rare; a call to the object per check is not worth it).
 */
export function otherWorkerCheck(fleet: FleetApi): (id: string) => boolean {
  let remote = false;
  return (id) => {
    if (remote) return true;
    const workers = fleet.listWorkers();
    if (!Array.isArray(workers)) {
      remote = true;
      Promise.resolve(workers).catch(() => {});
      return true;
    }
    const role = workers.find((w) => w.id === id)?.role;
    return workers.some(
      (w) =>
        w.id !== id &&
        (role === undefined || w.role === role) &&
        w.healthy &&
        !w.draining &&
        w.suspended !== true &&
        w.circuit !== 'open',
    );
  };
}

/** The KV connector a config runs: --kv-connector, else P2P-NCCL when workers register over ZMQ, else NIXL. */
export function pdConnector(config: RouterConfig): PdConnector {
  return config.pd.kvConnector ?? (config.pd.discoveryAddress === undefined ? 'nixl' : 'p2p_nccl');
}

function pdContext(config: RouterConfig, deps: RouterDeps): PdContext {
  const { bootstrap, zmqAddress } = deps.pd ?? {};
  return {
    connector: pdConnector(config),
    concurrent: config.pd.concurrentDispatch,
    kvHoldMs: config.pd.kvHoldSecs * 1000,
    instruments: createPdInstruments(deps.metrics),
    ...(bootstrap ? { bootstrap } : {}),
    ...(zmqAddress ? { zmqAddress } : {}),
  };
}

/** Returns a request's admission permit; called exactly once. */
export type Release = () => void;

/** One client request, as the pipeline needs it. */
export interface ProxyCall {
  /** Metrics label (the route pattern). */
  route: string;
  method: string;
  /** Path plus query string, forwarded unchanged. */
  target: string;
  /** Headers bound upstream (hop-by-hop already removed). */
  headers: Record<string, string>;
  /** The body: buffered (retryable) or streamed through (one attempt). */
  body: Uint8Array | ReadableStream<Uint8Array> | null;
  /** The client's connection: 'abort' when the client leaves (an AbortSignal fits). */
  clientSignal: ClientLink;
  /** The connection's peer address, where the runtime tells it (the request log's `client`). */
  peer?: string | undefined;
  requestId: string;
  info: RequestInfo;
  /** The parsed JSON body, for requests split into prefill and decode legs. */
  json?: JsonObject;
  /** Returns the admission permit; the exchange calls it once, when the request is finished. */
  release: Release;
  /** When a streamed upload failed on the client's side (too large, broken): the error for the client. */
  uploadFault?: () => RouterError | undefined;
}
