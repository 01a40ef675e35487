/** A PipelineContext over a scripted fleet and upstream, for unit tests of the routing layer. */
import { parseRouterConfig } from '../../../src/core/config/schema.ts';
import type {
  AttemptOutcome,
  FleetApi,
  RouteInput,
  RouteResult,
} from '../../../src/core/contracts/fleet-api.ts';
import type { Reports } from '../../../src/core/contracts/runtime.ts';
import type { Upstream, UpstreamRequest } from '../../../src/core/contracts/upstream.ts';
import { createLogger } from '../../../src/core/observability/logger.ts';
import { MetricsRegistry } from '../../../src/core/observability/metrics.ts';
import {
  createPipelineContext,
  type PipelineContext,
  type ProxyCall,
} from '../../../src/core/routing/context.ts';
import type { InFlight } from '../../../src/core/routing/in-flight.ts';
import { FakeClock, seededRandom } from '../../support/fake-clock.ts';

export interface ScriptedFleet {
  fleet: FleetApi;
  routed: RouteInput[];
  settled: { lease: number; outcome: AttemptOutcome }[];
}

/** A fleet that answers `route` from a script (one entry per call, the last one repeats). */
export function scriptedFleet(script: RouteResult[]): ScriptedFleet {
  const routed: RouteInput[] = [];
  const settled: { lease: number; outcome: AttemptOutcome }[] = [];
  const unused = () => {
    throw new Error('not used by the attempt loop');
  };
  const fleet: FleetApi = {
    route: (input) => {
      routed.push({ ...input, ...(input.exclude ? { exclude: [...input.exclude] } : {}) });
      return script[Math.min(routed.length - 1, script.length - 1)] as RouteResult;
    },
    settle: (lease, outcome) => {
      settled.push({ lease, outcome });
      return true;
    },
    listWorkers: () => [],
    getWorker: () => undefined,
    addWorker: unused,
    updateWorker: unused,
    recordProbes: unused,
    removeWorker: unused,
    setWorkerModels: unused,
    finishSession: unused,
    models: () => [],
    snapshot: () => ({ workers: [], models: [] }),
  };
  return { fleet, routed, settled };
}

export const routedTo = (id: string, lease: number): RouteResult => ({
  ok: true,
  worker: { id, url: `http://${id}` },
  lease,
});

export function testContext(options: {
  fleet: FleetApi;
  upstream: Upstream;
  clock?: FakeClock;
  config?: Record<string, unknown>;
  /** The router's list of requests in flight (Node and Deno have one; a Worker's isolate none). */
  inFlight?: InFlight;
  /** Where finished requests' reports wait (the Node host's turn queue); without it they run at once. */
  reports?: Reports;
  /** Receives the log lines (info and up); without it nothing is logged. */
  logSink?: (line: string) => void;
}): { ctx: PipelineContext; clock: FakeClock; metrics: MetricsRegistry } {
  const config = parseRouterConfig(options.config ?? {});
  const clock = options.clock ?? new FakeClock();
  const metrics = new MetricsRegistry();
  const deps = {
    clock,
    random: seededRandom(7),
    newId: () => 'id-1',
    upstream: options.upstream,
    fleet: options.fleet,
    logger: options.logSink
      ? createLogger({ level: 'info', json: false, sink: options.logSink, now: () => clock.now() })
      : createLogger({ level: 'error', json: false, sink: () => {}, now: () => clock.now() }),
    metrics,
    ...(options.inFlight ? { inFlight: options.inFlight } : {}),
    ...(options.reports ? { reports: options.reports } : {}),
  };
  const ctx: PipelineContext = {
    ...createPipelineContext(config, deps),
    idleTimeoutMs: { stream: 0, plain: 0 },
  };
  return { ctx, clock, metrics };
}

export function testCall(overrides: Partial<ProxyCall> = {}): ProxyCall {
  return {
    route: '/v1/chat/completions',
    method: 'POST',
    target: '/v1/chat/completions',
    headers: { 'content-type': 'application/json' },
    body: new TextEncoder().encode('{"model":"m"}'),
    clientSignal: new AbortController().signal,
    requestId: 'req-1',
    info: { model: 'm', stream: false },
    release: () => {},
    ...overrides,
  };
}

/** An upstream that answers each call with the next status of `statuses` (a real Response body). */
export function statusUpstream(statuses: number[], headers: Record<string, string> = {}) {
  const calls: UpstreamRequest[] = [];
  const upstream: Upstream = async (req) => {
    calls.push(req);
    const status = statuses[Math.min(calls.length - 1, statuses.length - 1)] as number;
    return { status, headers, body: new Response(`{"status":${status}}`).body };
  };
  return { upstream, calls };
}
