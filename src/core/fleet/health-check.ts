/**
 * The health tick: probe every worker's base URL once (ranks share it), concurrently, and record
 * the results (health transitions and the models each engine lists). Node and Deno run it on an
 * interval, Workers from a Durable Object alarm. `waitForHealthyWorker` is the startup wait.
 */
import type { RouterConfig } from '../config/schema.ts';
import type { FleetApi, ProbeReport } from '../contracts/fleet-api.ts';
import type { Clock } from '../contracts/runtime.ts';
import type { Upstream } from '../contracts/upstream.ts';
import type { Logger } from '../observability/logger.ts';
import { discoverModels } from './discovery.ts';
import { probeAll } from './health-probe.ts';

export interface HealthTickDeps {
  fleet: FleetApi;
  upstream: Upstream;
  clock: Clock;
  config: RouterConfig;
}

/** Probes every worker (or only the given base URLs) once; returns the reports it recorded. */
export async function runHealthTick(deps: HealthTickDeps, only?: readonly string[]): Promise<ProbeReport[]> {
  const { config } = deps;
  const workers = await deps.fleet.listWorkers();
  const urls = workers.map((w) => w.url).filter((u) => only === undefined || only.includes(u));
  if (urls.length === 0) return [];
  const results = await probeAll(deps.upstream, urls, {
    endpoint: config.health.endpoint,
    timeoutMs: config.health.timeoutSecs * 1000,
    clock: deps.clock,
    models: true,
    ...(config.workers.apiKey === undefined ? {} : { apiKey: config.workers.apiKey }),
  });
  const reports: ProbeReport[] = [...results].map(([url, r]) => ({
    url,
    ok: r.ok,
    ...(r.error === undefined ? {} : { error: r.error }),
    ...(r.models === undefined ? {} : { models: r.models }),
  }));
  await deps.fleet.recordProbes(reports);
  return reports;
}

/**
 * At startup: probe until a worker is healthy or `--worker-startup-timeout-secs` passes, every
 * `--worker-startup-check-interval` seconds (at most), logging progress. True when one is healthy.
 */
export async function waitForHealthyWorker(
  deps: HealthTickDeps & { logger: Logger; sleep: (ms: number) => Promise<void> },
): Promise<boolean> {
  const { config, clock, logger } = deps;
  const deadline = clock.now() + config.workers.startupTimeoutSecs * 1000;
  const interval = Math.min(config.workers.startupCheckIntervalSecs, config.health.intervalSecs) * 1000;
  for (;;) {
    await runHealthTick(deps);
    const workers = await deps.fleet.listWorkers();
    const healthy = workers.filter((w) => w.healthy).length;
    if (healthy > 0 || workers.length === 0) return healthy > 0;
    const left = deadline - clock.now();
    if (left <= 0) {
      logger.warn('no healthy worker before the startup timeout; serving anyway', {
        workers: workers.length,
        timeout_secs: config.workers.startupTimeoutSecs,
      });
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
