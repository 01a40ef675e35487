/**
 * The link between one replica and the shared store: every store call goes through `call`, which
 * counts it, and when the store fails or is slow degrades to local state (a fallback, counted and
 * warned about once per outage, never a failed request). Also the link's status for /health and
 * the metrics: connected, time since the last good sync (lag), fallbacks, events received.
 * Connected is what the calls find: down at a failed call, up again at the answer to a call made
 * since (a late answer to one made before the outage is no sign the store is back).
 */

import type { Clock } from '../contracts/runtime.ts';
import type { SharedStore } from '../contracts/shared-store.ts';
import type { Logger } from '../observability/logger.ts';
import type { Counter, MetricsRegistry } from '../observability/metrics.ts';

/** What `call` answers when the store could not be used. */
export const UNAVAILABLE: unique symbol = Symbol('store unavailable');
export type Maybe<T> = T | typeof UNAVAILABLE;

export interface StoreStatus {
  url: string;
  connected: boolean;
  /** Seconds since the last complete sync with the store (null: none yet). */
  lagSeconds: number | null;
  fallbacks: number;
}

export class StoreLink {
  connected = false;
  fallbacks = 0;
  private lastSyncAt: number | undefined;
  /** This outage was warned about (reset when the store answers again). */
  private warned = false;
  /** Times the store went down since start. */
  private outages = 0;
  private readonly ops: Counter;
  private readonly fallbackCounter: Counter;
  private readonly received: Counter;

  constructor(
    readonly store: SharedStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
    metrics: MetricsRegistry,
  ) {
    this.ops = metrics.counter(
      'vllm_router_state_store_operations_total',
      'Calls to the shared state store, by operation',
      ['op'],
    );
    this.fallbackCounter = metrics.counter(
      'vllm_router_state_store_fallbacks_total',
      'Store calls that failed or timed out, so the router used its local state, by operation',
      ['op'],
    );
    this.received = metrics.counter(
      'vllm_router_state_store_events_received_total',
      "Other replicas' events applied to this replica's fleet, by type",
      ['type'],
    );
    const up = metrics.gauge(
      'vllm_router_state_store_up',
      'Whether the shared state store answers (1) or the router routes on local state only (0)',
    );
    const lag = metrics.gauge(
      'vllm_router_state_store_lag_seconds',
      'Seconds since this replica last completed a sync with the shared state store (-1: never)',
    );
    metrics.addCollector(() => {
      up.set(this.connected ? 1 : 0);
      lag.set(this.lagSeconds() ?? -1);
    });
  }

  /** One store call: its answer, or UNAVAILABLE (counted as a fallback) when it failed. */
  async call<T>(op: string, fn: () => Promise<T>): Promise<Maybe<T>> {
    this.ops.labels(op).inc();
    const outages = this.outages;
    try {
      const value = await fn();
      // An answer to a call made before the store went down is no sign that it is back.
      if (outages === this.outages) this.up();
      return value;
    } catch (err) {
      this.fallback(op, err);
      return UNAVAILABLE;
    }
  }

  /** A decision was made on local state because the store was not usable. */
  fallback(op: string, err?: unknown): void {
    this.fallbacks++;
    this.fallbackCounter.labels(op).inc();
    this.down(err);
  }

  /** Another replica's event was applied here. */
  eventReceived(type: string): void {
    this.received.labels(type).inc();
  }

  synced(): void {
    this.lastSyncAt = this.clock.monotonic();
  }

  lagSeconds(): number | null {
    return this.lastSyncAt === undefined ? null : (this.clock.monotonic() - this.lastSyncAt) / 1000;
  }

  private up(): void {
    if (this.connected) return;
    this.connected = true;
    if (this.warned) this.logger.info('state store reachable again: resynchronising', this.fields());
    this.warned = false;
  }

  /** A call failed: warned about once per outage, however many calls fail. */
  private down(err?: unknown): void {
    if (this.connected) this.outages++;
    this.connected = false;
    if (this.warned) return;
    this.warned = true;
    const detail = err instanceof Error ? err.message : err === undefined ? undefined : String(err);
    this.logger.warn('state store unavailable: routing on local state until it answers', {
      ...this.fields(),
      ...(detail ? { error: detail } : {}),
    });
  }

  status(): StoreStatus {
    return {
      url: this.store.displayUrl,
      connected: this.connected,
      lagSeconds: this.lagSeconds(),
      fallbacks: this.fallbacks,
    };
  }

  private fields(): Record<string, unknown> {
    return { state_store: this.store.displayUrl };
  }
}
