/**
 * The live fleet page's statistics: for the router as a whole and for each worker, the requests
 * of the last minute (rate, error rate, p50/p99 latency and time to first token; live-window.ts),
 * and a short list of recent events (breaker transitions, health flips, quarantines, retried
 * requests, workers added, drained or removed from the admin API). Fed by the request observations
 * (observations.ts) and the fleet events (fleet-events.ts); pure apart from the injected clock.
 *
 * Bounded: at most `maxSeries` worker series (the idle ones go first) and `maxEvents` events; an
 * event identical to a recent one (among the last few, within COALESCE_MS) counts up that one and
 * moves it to the top, so a burst of retries does not push the breaker transitions out.
 */
import type { Clock } from '../contracts/runtime.ts';
import { WindowSeries, type WindowStats } from './live-window.ts';
import type { RequestObservation } from './observations.ts';

export type { Quantiles, WindowStats } from './live-window.ts';

export type LiveEventKind = 'breaker' | 'health' | 'quarantine' | 'retry' | 'admin' | 'fleet';

export interface LiveEvent {
  /** Wall clock ms of the latest occurrence. */
  time: number;
  kind: LiveEventKind;
  level: 'info' | 'warn';
  worker?: string;
  message: string;
  /** Occurrences folded into this entry (identical events in a row). */
  count: number;
}

export interface LiveSnapshot {
  windowSecs: number;
  router: WindowStats;
  workers: Map<string, WindowStats>;
  /** Newest first. */
  events: LiveEvent[];
}

export interface LiveStatsOptions {
  windowSecs?: number;
  maxEvents?: number;
  maxSeries?: number;
}

/** An event identical to one of the last COALESCE_LOOKBACK within COALESCE_MS folds into it. */
const COALESCE_MS = 10_000;
const COALESCE_LOOKBACK = 8;

/** A request counts as an error when it ended in a 5xx or the router answered with an error. */
export function isErrorObservation(o: RequestObservation): boolean {
  return o.status >= 500 || (o.error !== undefined && o.error !== 'client_disconnected');
}

export class LiveStats {
  readonly windowSecs: number;
  private readonly maxEvents: number;
  private readonly maxSeries: number;
  private readonly startedAt: number;
  private readonly router: WindowSeries;
  private readonly series = new Map<string, WindowSeries>();
  /** Newest last. */
  private readonly events: LiveEvent[] = [];
  /** Monotonic ms each open breaker opened at, by worker. */
  private readonly openedAt = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    options: LiveStatsOptions = {},
  ) {
    this.windowSecs = options.windowSecs ?? 60;
    this.maxEvents = options.maxEvents ?? 50;
    this.maxSeries = options.maxSeries ?? 256;
    this.startedAt = clock.monotonic();
    this.router = new WindowSeries(this.windowSecs);
  }

  /** One finished request (an Observations observer). */
  observe(o: RequestObservation): void {
    const sample = { at: o.at, latencyMs: o.latencyMs, ttftMs: o.ttftMs, error: isErrorObservation(o) };
    this.router.record(sample);
    if (o.worker !== undefined) this.seriesFor(o.worker).record(sample);
    if (o.attempts > 1) {
      this.push(
        'retry',
        'info',
        o.worker,
        `${o.route}: retried, ${o.attempts} attempts, answered ${o.status}`,
      );
    }
  }

  /** One fleet event (a FleetEvents listener). */
  fleetEvent(level: 'info' | 'warn', message: string, fields: Record<string, unknown>): void {
    const worker = typeof fields.worker === 'string' ? fields.worker : undefined;
    if (message === 'circuit breaker') {
      const to = String(fields.to);
      if (worker !== undefined) {
        if (to === 'open') this.openedAt.set(worker, this.clock.monotonic());
        else this.openedAt.delete(worker);
      }
      this.push('breaker', level, worker, `circuit ${String(fields.from)} → ${to}`);
    } else if (message === 'worker healthy' || message === 'worker unhealthy') {
      const why = typeof fields.error === 'string' ? ` (${fields.error})` : '';
      this.push('health', level, worker, `${message}${why}`);
    } else if (message.startsWith('worker quarantined')) {
      this.push('quarantine', level, worker, message);
    } else {
      this.push('fleet', level, worker, message);
    }
  }

  /** A change made through the admin API. */
  adminChange(action: 'added' | 'draining' | 'removed', worker: string): void {
    const text = {
      added: 'added from the admin API',
      draining: 'draining (removal requested from the admin API)',
      removed: 'removed from the admin API',
    }[action];
    this.push('admin', action === 'added' ? 'info' : 'warn', worker, text);
  }

  /** Monotonic ms the worker's breaker opened at, when this router saw it open. */
  breakerOpenedAt(worker: string): number | undefined {
    return this.openedAt.get(worker);
  }

  /** The window ending now. Series of workers not in `current` and idle for a window are dropped. */
  snapshot(current?: ReadonlySet<string>): LiveSnapshot {
    const now = this.clock.monotonic();
    const span = (now - this.startedAt) / 1000;
    if (current) this.prune(current, now);
    const workers = new Map<string, WindowStats>();
    for (const [id, s] of this.series) workers.set(id, s.read(now, span));
    return {
      windowSecs: this.windowSecs,
      router: this.router.read(now, span),
      workers,
      events: this.events.map((e) => ({ ...e })).reverse(),
    };
  }

  private prune(current: ReadonlySet<string>, now: number): void {
    const idleSince = now - this.windowSecs * 1000;
    for (const [id, s] of this.series) {
      if (!current.has(id) && s.lastAt <= idleSince) this.series.delete(id);
    }
    for (const id of this.openedAt.keys()) if (!current.has(id)) this.openedAt.delete(id);
  }

  private seriesFor(worker: string): WindowSeries {
    let s = this.series.get(worker);
    if (s) return s;
    if (this.series.size >= this.maxSeries) {
      let idlest: string | undefined;
      let oldest = Number.POSITIVE_INFINITY;
      for (const [id, other] of this.series) {
        if (other.lastAt < oldest) {
          oldest = other.lastAt;
          idlest = id;
        }
      }
      if (idlest !== undefined) this.series.delete(idlest);
    }
    s = new WindowSeries(this.windowSecs);
    this.series.set(worker, s);
    return s;
  }

  private push(kind: LiveEventKind, level: 'info' | 'warn', worker: string | undefined, message: string) {
    const time = this.clock.now();
    const { events } = this;
    for (let i = events.length - 1; i >= Math.max(0, events.length - COALESCE_LOOKBACK); i--) {
      const e = events[i]!;
      if (e.kind !== kind || e.worker !== worker || e.message !== message || time - e.time > COALESCE_MS) {
        continue;
      }
      events.splice(i, 1);
      events.push({ ...e, time, count: e.count + 1 });
      return;
    }
    events.push({ time, kind, level, ...(worker === undefined ? {} : { worker }), message, count: 1 });
    if (events.length > this.maxEvents) events.shift();
  }
}
