/**
 * The exchanges in flight: a shutdown cuts the ones still running when the grace period ends, and
 * one timer expires those whose deadline (--request-timeout-secs) passed.
 *
 * A slot list rather than a listener on a shared AbortSignal: adding and removing an event
 * listener per request costs several times more than a slot, on the hot path. Not a Set either:
 * slot-list.ts says why.
 *
 * One timer for every deadline rather than one per request: it is armed for the earliest deadline
 * of the requests in flight, and when it fires it expires those that are due and re-arms for the
 * next. With the requests finishing well inside their deadline it fires about once per timeout
 * period, and a request costs no timer of its own (on Deno a timer is a Node-style `Timeout`
 * object, one of the larger entries of a request's profile). The timer stops when the last
 * request leaves, so an idle router holds none.
 */
import type { Clock, TimerHandle } from '../contracts/runtime.ts';
import { SlotList, type Slotted } from './slot-list.ts';

export interface Stoppable extends Slotted {
  /** When it times out, on the clock's monotonic scale (ms). */
  readonly deadline: number;
  /** Its deadline passed: the request is cut. */
  expire(): void;
  /** Cuts the request: the router is shutting down. */
  cutForShutdown(): void;
}

export class InFlight {
  private readonly live = new SlotList<Stoppable>();
  private stoppedFlag = false;
  private timer: TimerHandle | undefined;
  /** The deadline the timer is armed for (Infinity: not armed). */
  private armedFor = Number.POSITIVE_INFINITY;

  constructor(private readonly clock: Clock) {}

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
    if (x.deadline < this.armedFor) this.arm(x.deadline);
  }

  delete(x: Stoppable): void {
    if (this.live.delete(x) && this.live.size === 0) this.disarm();
  }

  /** Cuts every request in flight, and every later one. Idempotent. */
  stop(): void {
    if (this.stoppedFlag) return;
    this.stoppedFlag = true;
    this.disarm();
    const cut = this.live.members();
    for (const x of cut) this.live.delete(x);
    for (const x of cut) x.cutForShutdown();
  }

  private arm(deadline: number): void {
    this.disarm();
    this.armedFor = deadline;
    this.timer = this.clock.setTimeout(this.onTimer, Math.max(0, deadline - this.clock.monotonic()));
  }

  private disarm(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
  }

  /** Expires what is due, then re-arms for the earliest deadline left. */
  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = this.clock.monotonic();
    const due: Stoppable[] = [];
    let next = Number.POSITIVE_INFINITY;
    for (const x of this.live.members()) {
      if (x.deadline <= now) due.push(x);
      else if (x.deadline < next) next = x.deadline;
    }
    for (const x of due) this.live.delete(x);
    if (next < Number.POSITIVE_INFINITY) this.arm(next);
    for (const x of due) x.expire();
  };
}
