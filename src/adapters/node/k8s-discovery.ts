/**
 * Kubernetes service discovery (--service-discovery, Node): one pod source per role selector (the
 * selector, plus --prefill-selector / --decode-selector with PD), each applying its pods to the fleet
 * (k8s-workers.ts). A source that fails (API server down, 403, a cut stream that cannot resume) is
 * restarted with backoff, forever: the failure is logged once per change of error, and once more
 * when the source works again. The router serves meanwhile (static and admin API workers), so an
 * API server down at start does not stop it.
 */
import type { RouterConfig } from '../../core/config/schema.ts';
import type { WorkerRole } from '../../core/contracts/fleet-api.ts';
import { type Clock, type TimerHandle, watchdog } from '../../core/contracts/runtime.ts';
import type { Counter, Gauge, MetricsRegistry } from '../../core/observability/metrics.ts';
import {
  describeK8sError,
  listWatchSources,
  loadKubeConfig,
  type PodSource,
  type PodSourceFactory,
} from './k8s-client.ts';
import { type WatchTarget, watchPlan } from './k8s-plan.ts';
import { PodWorkers, type PodWorkersSide } from './k8s-workers.ts';

export interface KubernetesDiscoveryOptions {
  /** The pod sources (default: the client's ListWatch with the configured credentials). */
  sources?: PodSourceFactory;
  /** Backoff between restarts after a failure: doubles from `initialMs` up to `maxMs`. */
  backoff?: { initialMs?: number; maxMs?: number };
  /** How often pods whose URL is taken are retried (default 1000 ms). */
  retryMs?: number;
}

export interface DiscoverySide extends PodWorkersSide {
  metrics: MetricsRegistry;
  clock: Clock;
}

interface Metrics {
  workers: Gauge;
  restarts: Counter;
  lastSync: Gauge;
  errors: Counter;
}

interface Watcher {
  target: WatchTarget;
  workers: PodWorkers;
  source?: PodSource;
  /** Failures since it last worked; the backoff grows with them. */
  failures: number;
  /** The failure last logged (kind and status or code): logged again only when it changes. */
  failing?: string;
  timer?: TimerHandle;
  /** Watches opened since the last start (a later one is the client resuming on its own). */
  watches: number;
  synced: boolean;
}

const ROLES: readonly WorkerRole[] = ['regular', 'prefill', 'decode'];

export class KubernetesDiscovery {
  private watchers: Watcher[] = [];
  private side: DiscoverySide | undefined;
  private m: Metrics | undefined;
  private stopped = false;
  private retryTimer: TimerHandle | undefined;
  private syncedResolve: (() => void) | undefined;
  private readonly syncedPromise = new Promise<void>((resolve) => {
    this.syncedResolve = resolve;
  });
  private readonly initialMs: number;
  private readonly maxMs: number;

  constructor(
    private readonly config: RouterConfig,
    private readonly sources: PodSourceFactory,
    private readonly options: KubernetesDiscoveryOptions = {},
  ) {
    this.initialMs = options.backoff?.initialMs ?? 1000;
    this.maxMs = options.backoff?.maxMs ?? 30_000;
  }

  /** Starts every pod source; failures are retried in the background (this never throws). */
  start(side: DiscoverySide): void {
    const { metrics } = side;
    const m: Metrics = {
      workers: metrics.gauge(
        'vllm_router_discovery_workers',
        'Workers added by Kubernetes discovery, by role',
        ['role'],
      ),
      restarts: metrics.counter(
        'vllm_router_discovery_watch_restarts_total',
        'Pod watches re-opened: after an error (with backoff), a closed stream or a 410 Gone re-list',
      ),
      lastSync: metrics.gauge(
        'vllm_router_discovery_last_sync_timestamp_seconds',
        'When the last pod list succeeded or the last watch event (or bookmark) arrived',
      ),
      errors: metrics.counter(
        'vllm_router_discovery_errors_total',
        'Pod list and watch failures, by kind (list, watch, auth: 401/403)',
        ['kind'],
      ),
    };
    for (const kind of ['list', 'watch', 'auth']) m.errors.labels(kind);
    this.side = side;
    this.m = m;
    this.watchers = watchPlan(this.config).map((target) => ({
      target,
      workers: new PodWorkers(side, target.rules, this.config.workers.dpSize),
      failures: 0,
      watches: 0,
      synced: false,
    }));
    this.updateGauge();
    for (const w of this.watchers) {
      side.logger.info('Kubernetes discovery watching pods', this.where(w));
      this.run(w);
    }
  }

  /** Resolves once every pod source has listed its pods once. */
  synced(): Promise<void> {
    return this.syncedPromise;
  }

  /** Stops watching; the discovered workers stay in the fleet. */
  async stop(): Promise<void> {
    this.stopped = true;
    const side = this.side;
    if (this.retryTimer !== undefined) side?.clock.clearTimeout(this.retryTimer);
    for (const w of this.watchers) if (w.timer !== undefined) side?.clock.clearTimeout(w.timer);
    await Promise.all(this.watchers.map((w) => w.source?.stop()));
  }

  private run(w: Watcher): void {
    if (this.stopped) return;
    const { side, m } = this.need();
    w.watches = 0;
    w.source ??= this.sources(
      { namespace: this.config.discovery.namespace, labelSelector: w.target.labelSelector },
      {
        event: (type, pod) => {
          w.workers.handle(type, pod);
          this.afterChange();
        },
        listed: () => {
          this.worked(w);
          if (!w.synced) {
            w.synced = true;
            if (this.watchers.every((x) => x.synced)) this.syncedResolve?.();
          }
        },
        watching: () => this.worked(w),
        watchStarting: () => {
          if (w.watches++ > 0) m.restarts.inc();
        },
        activity: () => m.lastSync.set(side.clock.now() / 1000),
        failed: (err, stage) => this.failed(w, err, stage),
      },
    );
    w.source.start();
  }

  private worked(w: Watcher): void {
    const { side, m } = this.need();
    m.lastSync.set(side.clock.now() / 1000);
    if (w.failing !== undefined) {
      side.logger.info('Kubernetes pod watch works again', { ...this.where(w), failures: w.failures });
    }
    w.failures = 0;
    delete w.failing;
  }

  private failed(w: Watcher, err: unknown, stage: 'list' | 'watch'): void {
    if (this.stopped || w.timer !== undefined) return;
    const { side, m } = this.need();
    const d = describeK8sError(err);
    const kind = d.status === 401 || d.status === 403 ? 'auth' : stage;
    m.errors.labels(kind).inc();
    const delay = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(w.failures, 30));
    w.failures++;
    const signature = `${kind}:${d.status ?? d.code ?? d.message}`;
    if (signature !== w.failing) {
      w.failing = signature;
      side.logger.warn(
        'Kubernetes pod watch failed: retrying with backoff (logged again when the error changes)',
        {
          ...this.where(w),
          kind,
          error: d.message,
          retry_in_ms: delay,
        },
      );
    }
    w.timer = side.clock.setTimeout(() => {
      delete w.timer;
      if (this.stopped) return;
      m.restarts.inc();
      this.run(w);
    }, delay);
    (w.timer as { unref?: () => void } | undefined)?.unref?.();
  }

  /** After pod events: the gauge, and a retry timer while some pod waits for its URL. */
  private afterChange(): void {
    this.updateGauge();
    if (this.retryTimer !== undefined || this.stopped) return;
    if (!this.watchers.some((w) => w.workers.waiting > 0)) return;
    const { side } = this.need();
    this.retryTimer = side.clock.setTimeout(
      watchdog(() => {
        this.retryTimer = undefined;
        for (const w of this.watchers) w.workers.retryWaiting();
        this.afterChange();
      }),
      this.options.retryMs ?? 1000,
    );
    (this.retryTimer as { unref?: () => void } | undefined)?.unref?.();
  }

  private updateGauge(): void {
    const { m } = this.need();
    const total = new Map<WorkerRole, number>();
    for (const w of this.watchers) {
      for (const [role, n] of w.workers.countByRole()) total.set(role, (total.get(role) ?? 0) + n);
    }
    // Every role watched is shown, at 0 too (production-stack labels give prefill and decode).
    const watched = new Set<WorkerRole>(
      this.watchers.flatMap((w) => (w.target.role === 'label' ? ['prefill', 'decode'] : [w.target.role])),
    );
    for (const role of ROLES) {
      if (watched.has(role) || total.has(role)) m.workers.labels(role).set(total.get(role) ?? 0);
    }
  }

  private where(w: Watcher) {
    const { namespace } = this.config.discovery;
    return {
      role: w.target.role === 'label' ? 'by label' : w.target.role,
      selector: w.target.labelSelector,
      namespace: namespace ?? '(all)',
    };
  }

  private need(): { side: DiscoverySide; m: Metrics } {
    const { side, m } = this;
    if (!side || !m) throw new Error('KubernetesDiscovery used before start()');
    return { side, m };
  }
}

/**
 * The discovery a config asks for (--service-discovery k8s), credentials loaded; undefined without
 * it. Rejects with a ConfigError when the plan or the credentials are unusable.
 */
export async function kubernetesDiscoveryFor(
  config: RouterConfig,
  clock: Clock,
  options: KubernetesDiscoveryOptions = {},
): Promise<KubernetesDiscovery | undefined> {
  if (config.discovery.mode !== 'k8s') return undefined;
  watchPlan(config);
  let sources = options.sources;
  if (!sources) {
    const { kc, k8s } = await loadKubeConfig(config.discovery.kubeconfig);
    sources = listWatchSources(kc, k8s, clock);
  }
  return new KubernetesDiscovery(config, sources, options);
}
