/**
 * What the fleet's Durable Objects share: the main object (fleet-object.ts: registry, admin, health
 * probes) and the model pools' objects (pool-object.ts: routing of one model's requests). Each
 * holds a core `Fleet` built from the same configuration, and:
 *
 * - serves RPC calls counted by method (`calls`, and `vllm_router_fleet_object_calls_total` with
 *   the object's name as the `object` label: Cloudflare allows one object about 1,000 calls/s);
 * - numbers its leases with its start epoch (epoch × LEASE_SPAN + the fleet's own number), so a
 *   lease taken before a restart can never release one taken after it; leases live in memory with
 *   an expiry (the request timeout) and are reclaimed at most once a second on routing calls;
 * - persists what `save()` writes at once after a call that moved a breaker or a worker's health
 *   (or an admin change) and otherwise within SOFT_FLUSH_MS;
 * - sums the request metrics isolates ship with their settles.
 */
import { DurableObject } from 'cloudflare:workers';
import type { RouterConfig } from '../../core/config/schema.ts';
import { RouterError } from '../../core/contracts/errors.ts';
import type { AttemptOutcome, RouteInput } from '../../core/contracts/fleet-api.ts';
import { type Clock, systemClock, systemRandom } from '../../core/contracts/runtime.ts';
import type { Fleet } from '../../core/fleet/fleet.ts';
import type { Logger } from '../../core/observability/logger.ts';
import { MetricsRegistry } from '../../core/observability/metrics.ts';
import { createRouter, type Router } from '../../core/router.ts';
import { fetchUpstream } from '../../core/upstream/fetch-upstream.ts';
import { DEFAULT_FLEET_OBJECT, type FleetBindings, readRouterConfig } from './bindings.ts';
import { consoleSink } from './console-sink.ts';
import { MetricsAggregate } from './metrics-sum.ts';
import type { FleetObjectRpc, MetricsDelta, PoolObjectRpc, RouteReply } from './rpc.ts';
import { StateStore } from './state-store.ts';

/** The bindings, with the fleet namespaces typed by what their objects answer. */
export interface FleetEnv extends FleetBindings {
  FLEET: DurableObjectNamespace<FleetObjectRpc>;
  FLEET_POOLS?: DurableObjectNamespace<PoolObjectRpc>;
}

/** Lease numbers: epoch × LEASE_SPAN + the fleet's own lease number. */
export const LEASE_SPAN = 2 ** 32;
export const SOFT_FLUSH_MS = 10_000;
const EXPIRE_EVERY_MS = 1_000;

export abstract class FleetObjectBase extends DurableObject<FleetEnv> {
  /** The object's wall clock (leases, breakers, sessions); tests may shift it. */
  now: () => number = () => Date.now();
  /** RPC calls served, by method (tests and benchmarks read it). */
  readonly calls: Record<string, number> = {};
  /** The name the object was reached by (`idFromName`). */
  protected readonly name: string;
  protected readonly clock: Clock = { ...systemClock, now: () => this.now() };
  protected readonly metrics = new MetricsRegistry();
  protected readonly requestMetrics = new MetricsAggregate();
  protected readonly store: StateStore;
  protected config!: RouterConfig;
  protected router!: Router<Fleet>;
  protected fleet!: Fleet;
  protected logger!: Logger;
  /** This start's number (1, 2, ...): leases and registry versions carry it. */
  protected epoch = 0;
  private readonly callCounter = this.metrics.counter(
    'vllm_router_fleet_object_calls_total',
    'Calls served by each fleet Durable Object, by method (Cloudflare: about 1,000/s per object)',
    ['method', 'object'],
  );
  private leaseBase = 0;
  /** A breaker or health flip happened during this call: persist before answering. */
  private urgent = false;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private nextExpiry = 0;

  constructor(ctx: DurableObjectState, env: FleetEnv) {
    super(ctx, env);
    this.name = ctx.id.name ?? DEFAULT_FLEET_OBJECT;
    this.store = new StateStore(ctx.storage);
    void ctx.blockConcurrencyWhile(() => this.start());
  }

  /** Runs inside `blockConcurrencyWhile` before any call is served; calls `build()` first. */
  protected abstract start(): Promise<void>;

  /** Writes the object's state (persist() calls it). */
  protected abstract save(): void;

  /** Told of every fleet event (health, breakers) after it made the next write urgent. */
  protected fleetEvent(_message: string, _fields: Record<string, unknown>): void {}

  /** The configuration, the router around the in-memory fleet, and this start's epoch. */
  protected build(): void {
    this.config = readRouterConfig(this.env);
    this.router = createRouter(this.config, {
      upstream: fetchUpstream(),
      logSink: consoleSink,
      clock: this.clock,
      random: systemRandom,
      metrics: this.metrics,
      onFleetEvent: (_level, message, fields) => {
        this.urgent = true;
        this.fleetEvent(message, fields);
      },
    });
    this.fleet = this.router.fleet;
    this.logger = this.router.logger;
    this.epoch = this.store.nextEpoch();
    this.leaseBase = this.epoch * LEASE_SPAN;
  }

  /** Writes pending changes now (what the soft-flush timer does within SOFT_FLUSH_MS). */
  flush(): void {
    this.persist();
  }

  protected persist(): void {
    this.urgent = false;
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.save();
  }

  /** After a call that changed state: persist now if it mattered, else within SOFT_FLUSH_MS. */
  private changed(): void {
    if (this.urgent) this.persist();
    else this.flushTimer ??= setTimeout(() => this.persist(), SOFT_FLUSH_MS);
  }

  /** Serves one RPC call: counts it, then persists what it changed (`now`) or schedules it (`soon`). */
  protected serve<T>(method: string, fn: () => T, write?: 'now' | 'soon'): T {
    this.count(method);
    const result = fn();
    if (write === 'now') this.persist();
    else if (write === 'soon') this.changed();
    return result;
  }

  protected count(method: string): void {
    this.calls[method] = (this.calls[method] ?? 0) + 1;
    this.callCounter.labels(method, this.name).inc();
  }

  protected expireDue(): void {
    const now = this.now();
    if (now < this.nextExpiry) return;
    this.nextExpiry = now + EXPIRE_EVERY_MS;
    this.fleet.expireLeases();
  }

  /** One routing decision, served as a `route` call; a lease number carries this start's epoch. */
  protected routeHere(input: RouteInput): RouteReply {
    this.expireDue();
    return this.serve('route', () => this.routeOnce(input), 'soon');
  }

  private routeOnce(input: RouteInput): RouteReply {
    try {
      const result = this.fleet.route(input);
      return result.ok ? { ...result, lease: this.leaseBase + result.lease } : result;
    } catch (err) {
      if (!(err instanceof RouterError)) throw err;
      const error: Extract<RouteReply, { code: 'router_error' }>['error'] = {
        code: err.code,
        message: err.message,
      };
      if (err.param !== null) error.param = err.param;
      if (err.retryAfterSecs !== undefined) error.retryAfterSecs = err.retryAfterSecs;
      return { ok: false, code: 'router_error', error };
    }
  }

  async settle(lease: number, outcome: AttemptOutcome, metrics?: MetricsDelta): Promise<boolean> {
    if (metrics) this.requestMetrics.add(metrics);
    const local = lease - this.leaseBase;
    // A lease from before a restart is already gone (and its number may be reused).
    const ours = local > 0 && local < LEASE_SPAN;
    return this.serve('settle', () => ours && this.fleet.settle(local, outcome), 'soon');
  }

  /** This object's Prometheus page: its fleet's metrics and the request metrics shipped to it. */
  protected async ownMetricsText(): Promise<string> {
    this.expireDue();
    this.count('metricsText');
    return (await this.metrics.render()) + this.requestMetrics.render();
  }
}
