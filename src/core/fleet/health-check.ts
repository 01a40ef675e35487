/**
 * The health tick: probe every worker's base URL once (ranks share it), concurrently, and record
 * the results (health transitions and the models each engine lists). Node and Deno run it on an
 * interval, Workers from a Durable Object alarm. `waitForHealthyWorker` is the startup wait. A
 * failed probe's error names its cause (status, connection refused, timeout...) and the URL probed,
 * so the fleet's "worker unhealthy" line and the probe log (probe-log.ts) say why.
 */
import type { RouterConfig } from '../config/schema.ts';
import type { FleetApi, ProbeReport } from '../contracts/fleet-api.ts';
import type { Clock } from '../contracts/runtime.ts';
import type { Upstream } from '../contracts/upstream.ts';
import type { Logger } from '../observability/logger.ts';
import { discoverModels } from './discovery.ts';
import { probeAll } from './health-probe.ts';
import { describeProbeFailure, type ProbeLog } from './probe-log.ts';

export interface HealthTickDeps {
  fleet: FleetApi;
  upstream: Upstream;
  clock: Clock;
  config: RouterConfig;
  /** Logs each worker's probe outcome when it changes (first failure, another cause, recovery). */
  probeLog?: ProbeLog;
}

/** Probes every worker (or only the given base URLs) once; returns the reports it recorded. */
export async function runHealthTick(deps: HealthTickDeps, only?: readonly string[]): Promise<ProbeReport[]> {
  const { config } = deps;
  const workers = await deps.fleet.listWorkers();
  const urls = workers.map((w) => w.url).filter((u) => only === undefined || only.includes(u));
  if (urls.length === 0) return [];
  const { endpoint } = config.health;
  const results = await probeAll(deps.upstream, urls, {
    endpoint,
    timeoutMs: config.health.timeoutSecs * 1000,
    clock: deps.clock,
    models: true,
    ...(config.workers.apiKey === undefined ? {} : { apiKey: config.workers.apiKey }),
  });
  deps.probeLog?.note(workers, results, endpoint);
  const reports: ProbeReport[] = [...results].map(([url, r]) => ({
    url,
    ok: r.ok,
    ...(r.ok ? {} : { error: describeProbeFailure(url, endpoint, r) }),
    ...(r.models === undefined ? {} : { models: r.models }),
  }));
  await deps.fleet.recordProbes(reports);
  return reports;
}

export interface StartupDeps extends HealthTickDeps {
  logger: Logger;
  sleep: (ms: number) => Promise<void>;
  /** Stops the wait (the router is shutting down). */
  signal?: AbortSignal;
}

/**
 * At startup: probe until a worker is healthy or `--worker-startup-timeout-secs` passes, every
 * `--worker-startup-check-interval` seconds (at most), logging progress. True when one is healthy.
 * The router serves meanwhile (/readiness answers 503), and keeps serving after a timeout.
 */
export async function waitForHealthyWorker(deps: StartupDeps): Promise<boolean> {
  const { config, clock, logger } = deps;
  const deadline = clock.now() + config.workers.startupTimeoutSecs * 1000;
  const interval = Math.min(config.workers.startupCheckIntervalSecs, config.health.intervalSecs) * 1000;
  for (;;) {
    if (deps.signal?.aborted) return false;
    await runHealthTick(deps);
    const workers = await deps.fleet.listWorkers();
    const healthy = workers.filter((w) => w.healthy).length;
    if (healthy > 0 || workers.length === 0 || deps.signal?.aborted) return healthy > 0;
    const left = deadline - clock.now();
    if (left <= 0) {
      logger.warn(
        `no healthy worker within --worker-startup-timeout-secs (${config.workers.startupTimeoutSecs} s): ` +
          'still serving; /readiness answers 503 until a worker is healthy',
        { workers: workers.length, unhealthy: workers.map((w) => w.id) },
      );
      return false;
    }
    logger.info('waiting for a healthy worker', {
      workers: workers.length,
      retry_in_ms: Math.min(interval, left),
    });
    await deps.sleep(Math.min(interval, left));
  }
}

/**
 * Brings the fleet's view of its workers up to date, the one way every runtime does it: with health
 * checks on, a health tick (probes and the models each engine lists; `only` limits it to some base
 * URLs); with them off, a `/v1/models` lookup for the workers whose models are not known yet. Both
 * send --api-key to the engines.
 */
export async function refreshWorkers(deps: HealthTickDeps, only?: readonly string[]): Promise<void> {
  const { config } = deps;
  if (!config.health.disabled) {
    await runHealthTick(deps, only);
    return;
  }
  await discoverModels(deps.fleet, deps.upstream, {
    clock: deps.clock,
    timeoutMs: config.health.timeoutSecs * 1000,
    ...(config.workers.apiKey === undefined ? {} : { apiKey: config.workers.apiKey }),
  });
}
