/**
 * The exchanges in flight: a shutdown cuts the ones still running when the grace period ends, and
 * one timer expires those whose deadline (--request-timeout-secs) passed (due-list.ts).
 *
 * A list rather than a listener on a shared AbortSignal: adding and removing an event listener per
 * request costs several times more than a slot, on the hot path. With the requests finishing well
 * inside their deadline the timer fires about once per timeout period, and a request costs no timer
 * of its own.
 */
import type { Clock } from '../contracts/runtime.ts';
import { DueList, type Expiring } from './due-list.ts';

export interface Stoppable extends Expiring {
  /** Cuts the request: the router is shutting down. */
  cutForShutdown(): void;
}

export class InFlight {
  private readonly live: DueList<Stoppable>;
  private stoppedFlag = false;

  constructor(clock: Clock) {
    this.live = new DueList(clock);
  }

  get stopped(): boolean {
    return this.stoppedFlag;
  }

  get size(): number {
    return this.live.size;
  }

  /** Tracks `x` until `delete`, its deadline or the shutdown; cut at once when the router already stopped. */
  add(x: Stoppable): void {
    if (this.stoppedFlag) {
      x.cutForShutdown();
      return;
    }
    this.live.add(x);
  }

  delete(x: Stoppable): void {
    this.live.delete(x);
  }

  /** Cuts every request in flight, and every later one. Idempotent. */
  stop(): void {
    if (this.stoppedFlag) return;
    this.stoppedFlag = true;
    for (const x of this.live.takeAll()) x.cutForShutdown();
  }
}
