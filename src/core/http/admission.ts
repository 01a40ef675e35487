/**
 * Admission control (--max-concurrent-requests, --queue-size, --queue-timeout-secs): at most N
 * requests in flight (a permit is held until the response body ends); up to `queueSize` more wait
 * in FIFO order for `queueTimeoutSecs`. A full queue is a 429 `admission_queue_full`, a wait that
 * times out a 503 `admission_queue_timeout`, both with Retry-After and never retried by the router.
 */

import { RouterError } from '../contracts/errors.ts';
import type { Clock, TimerHandle } from '../contracts/runtime.ts';

export type Release = () => void;

interface Waiter {
  resolve(release: Release | RouterError): void;
  timer: TimerHandle;
  signal: AbortSignal;
  onAbort: () => void;
}

const NOOP: Release = () => {};

export class Admission {
  private inFlight = 0;
  private readonly queue: Waiter[] = [];

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

  /** A permit (call the release exactly once), or the RouterError to answer with. */
  acquire(signal: AbortSignal): Release | RouterError | Promise<Release | RouterError> {
    if (!this.enabled) return NOOP;
    if (this.inFlight < (this.limit as number)) return this.grant();
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
        onAbort: () => {
          this.drop(waiter);
          resolve(new RouterError('admission_queue_timeout', 'the client left while queued'));
        },
        timer: this.clock.setTimeout(() => {
          this.drop(waiter);
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
      signal.addEventListener('abort', waiter.onAbort, { once: true });
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
    waiter.resolve(this.grant());
  }

  private drop(waiter: Waiter): void {
    const i = this.queue.indexOf(waiter);
    if (i >= 0) this.queue.splice(i, 1);
    this.clock.clearTimeout(waiter.timer);
    waiter.signal.removeEventListener('abort', waiter.onAbort);
  }
}
