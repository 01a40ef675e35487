/**
 * GET /dashboard/state: what the live fleet page shows, as one JSON document (snake_case, as the
 * admin API): the pools' policies, the router's own statistics over the last minute, each worker
 * (registry state, breaker with the time left before it admits a probe, in-flight load, its own
 * statistics, sticky sessions and prefix-tree size where a policy reports them), and the recent
 * events. Values the router does not know here (a breaker opened before this router saw it, a
 * policy without sessions) are null.
 */
import type { RouterConfig } from '../config/schema.ts';
import type { FleetApi, WorkerInfo } from '../contracts/fleet-api.ts';
import type { Clock } from '../contracts/runtime.ts';
import type { LiveEvent, LiveStats, WindowStats } from '../observability/live-stats.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import { readGaugeSources } from '../policies/policy-metrics.ts';

export interface DashboardDeps {
  fleet: FleetApi;
  clock: Clock;
  config: RouterConfig;
  metrics: MetricsRegistry;
  stats: LiveStats;
}

export interface DashboardWorker extends WindowStats {
  id: string;
  url: string;
  role: WorkerInfo['role'];
  models: string[] | null;
  healthy: boolean;
  draining: boolean;
  suspended: boolean;
  circuit: WorkerInfo['circuit'];
  /** Open breaker: ms until it admits a probe (0: the next request may probe); null when unknown. */
  next_probe_in_ms: number | null;
  load: number;
  processed: number;
  sessions: { pinned: number; active: number } | null;
  tree_size: number | null;
}

export interface DashboardState {
  time: number;
  window_secs: number;
  policies: { regular: string; prefill?: string; decode?: string };
  pd: boolean;
  router: WindowStats & { in_flight: number; workers: number; healthy_workers: number };
  workers: DashboardWorker[];
  events: (Omit<LiveEvent, 'worker'> & { worker: string | null })[];
}

const EMPTY: WindowStats = {
  requests: 0,
  requests_per_sec: 0,
  error_rate: null,
  latency_ms: null,
  ttft_ms: null,
};

function nextProbeIn(w: WorkerInfo, deps: DashboardDeps, now: number): number | null {
  if (w.circuit !== 'open') return null;
  const openedAt = deps.stats.breakerOpenedAt(w.id);
  if (openedAt === undefined) return null;
  const secs = w.circuitBreaker?.timeoutDurationSecs ?? deps.config.circuitBreaker.timeoutDurationSecs;
  return Math.max(0, Math.round(openedAt + secs * 1000 - now));
}

export async function dashboardState(deps: DashboardDeps): Promise<DashboardState> {
  const { config } = deps;
  const list = [...(await deps.fleet.listWorkers())].sort((a, b) => a.id.localeCompare(b.id));
  const live = deps.stats.snapshot(new Set(list.map((w) => w.id)));
  const now = deps.clock.monotonic();
  const pinned = readGaugeSources(deps.metrics, 'vllm_router_sll_pinned_sessions');
  const active = readGaugeSources(deps.metrics, 'vllm_router_sll_active_sessions');
  const tree = readGaugeSources(deps.metrics, 'vllm_router_tree_size');
  const workers = list.map(
    (w): DashboardWorker => ({
      id: w.id,
      url: w.url,
      role: w.role,
      models: w.models,
      healthy: w.healthy,
      draining: w.draining,
      suspended: w.suspended === true,
      circuit: w.circuit,
      next_probe_in_ms: nextProbeIn(w, deps, now),
      load: w.load,
      processed: w.processed,
      ...(live.workers.get(w.id) ?? EMPTY),
      sessions: pinned && active ? { pinned: pinned.get(w.id) ?? 0, active: active.get(w.id) ?? 0 } : null,
      tree_size: tree ? (tree.get(w.id) ?? 0) : null,
    }),
  );
  const policy = config.policy;
  return {
    time: deps.clock.now(),
    window_secs: live.windowSecs,
    policies: config.pd.enabled
      ? { regular: policy.name, prefill: policy.prefill ?? policy.name, decode: policy.decode ?? policy.name }
      : { regular: policy.name },
    pd: config.pd.enabled,
    router: {
      ...live.router,
      in_flight: list.reduce((n, w) => n + w.load, 0),
      workers: list.length,
      healthy_workers: list.filter((w) => w.healthy && !w.draining).length,
    },
    workers,
    events: live.events.map((e) => ({ ...e, worker: e.worker ?? null })),
  };
}
