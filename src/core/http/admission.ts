/**
 * Admission control (--max-concurrent-requests, --queue-size, --queue-timeout-secs): at most N
 * requests in flight (a permit is held until the response body ends); up to `queueSize` more wait
 * in FIFO order for `queueTimeoutSecs`. A full queue is a 429 `admission_queue_full`, a wait that
 * times out a 503 `admission_queue_timeout`, both with Retry-After and never retried by the router.
 * Metrics (`exportMetrics`): permits in use and queue depth (read at scrape time), and the wait of
 * every request admitted (0 when a permit was free), timed out or gone while queued.
 */

import { RouterError } from '../contracts/errors.ts';
import type { Clock, TimerHandle } from '../contracts/runtime.ts';
import type { HistogramChild, MetricsRegistry } from '../observability/metrics.ts';
import type { ClientLink } from '../routing/context.ts';

export type Release = () => void;

interface Waiter {
  resolve(release: Release | RouterError): void;
  timer: TimerHandle;
  signal: ClientLink;
  onAbort: () => void;
  queuedAt: number;
}

/** Waits in seconds: queue waits are short, and a timeout ends them at --queue-timeout-secs. */
const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

interface WaitChildren {
  admitted: HistogramChild;
  timedOut: HistogramChild;
  left: HistogramChild;
}

const NOOP: Release = () => {};

export class Admission {
  private inFlight = 0;
  private readonly queue: Waiter[] = [];
  private waits: WaitChildren | undefined;

  constructor(
    private readonly limit: number | undefined,
    private readonly queueSize: number,
    private readonly queueTimeoutMs: number,
    private readonly clock: Clock,
  ) {}

  get enabled(): boolean {
    return this.limit !== undefined && this.limit > 0;
  }

  get active(): number {
    return this.inFlight;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** Exports the permits in use, the queue depth and the queue waits to `metrics`. */
  exportMetrics(metrics: MetricsRegistry): void {
    const active = metrics.gauge(
      'vllm_router_admission_active_requests',
      'Requests holding an admission permit',
    );
    const depth = metrics.gauge(
      'vllm_router_admission_queue_depth',
      'Requests waiting in the admission queue',
    );
    const wait = metrics.histogram(
      'vllm_router_admission_queue_wait_seconds',
      'Time requests waited for an admission permit, by outcome (admitted, timed_out, client_left)',
      ['outcome'],
      WAIT_BUCKETS,
    );
    metrics.addCollector(() => {
      active.set(this.inFlight);
      depth.set(this.queue.length);
    });
    if (!this.enabled) return;
    this.waits = {
      admitted: wait.labels('admitted'),
      timedOut: wait.labels('timed_out'),
      left: wait.labels('client_left'),
    };
  }

  /** A permit (call the release exactly once), or the RouterError to answer with. */
  acquire(signal: ClientLink): Release | RouterError | Promise<Release | RouterError> {
    if (!this.enabled) return NOOP;
    if (this.inFlight < (this.limit as number)) {
      this.waits?.admitted.observe(0);
      return this.grant();
    }
    if (this.queue.length >= this.queueSize) {
      return new RouterError(
        'admission_queue_full',
        'the router is at capacity and its queue is full; retry later',
        {
          retryAfterSecs: 1,
        },
      );
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        resolve,
        signal,
        queuedAt: this.clock.monotonic(),
        onAbort: () => {
          this.drop(waiter);
          this.observeWait(this.waits?.left, waiter);
          resolve(new RouterError('admission_queue_timeout', 'the client left while queued'));
        },
        timer: this.clock.setTimeout(() => {
          this.drop(waiter);
          this.observeWait(this.waits?.timedOut, waiter);
          resolve(
            new RouterError(
              'admission_queue_timeout',
              `no capacity within ${this.queueTimeoutMs} ms; retry later`,
              {
                retryAfterSecs: Math.max(1, Math.ceil(this.queueTimeoutMs / 1000)),
              },
            ),
          );
        }, this.queueTimeoutMs),
      };
      signal.addEventListener('abort', waiter.onAbort);
      this.queue.push(waiter);
    });
  }

  private grant(): Release {
    this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight--;
      this.next();
    };
  }

  private next(): void {
    const waiter = this.queue.shift();
    if (!waiter) return;
    this.clock.clearTimeout(waiter.timer);
    waiter.signal.removeEventListener('abort', waiter.onAbort);
    this.observeWait(this.waits?.admitted, waiter);
    waiter.resolve(this.grant());
  }

  private observeWait(child: HistogramChild | undefined, waiter: Waiter): void {
    child?.observe((this.clock.monotonic() - waiter.queuedAt) / 1000);
  }

  private drop(waiter: Waiter): void {
    const i = this.queue.indexOf(waiter);
    if (i >= 0) this.queue.splice(i, 1);
    this.clock.clearTimeout(waiter.timer);
    waiter.signal.removeEventListener('abort', waiter.onAbort);
  }
}
