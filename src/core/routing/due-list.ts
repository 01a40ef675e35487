/**
 * Members that expire at a time of their own (a request's deadline, a stream's idle limit), watched
 * with one timer for all of them rather than one each. The timer is armed for the earliest due time;
 * when it fires it expires the members that are due, and re-arms for the earliest left. A member's
 * due time may move later after it joined (a stream that just delivered a chunk), never earlier:
 * the timer then fires early, finds it not due, and waits out the rest. The timer stops when the
 * last member leaves, so an idle router holds none.
 *
 * Why not a timer per member: on Deno a timer is a Node-style `Timeout` object in a map of the
 * runtime's, one of the larger entries of a request's profile, and one that lives on after it is
 * cleared (docs/benchmarks.md, rounds 6 and 10). Members sit in a slot list (slot-list.ts says why
 * not a Set).
 */
import { callbackOf } from '../contracts/callback-of.ts';
import { type Clock, type TimerHandle, watchdog } from '../contracts/runtime.ts';
import { SlotList, type Slotted } from './slot-list.ts';

export interface Expiring extends Slotted {
  /** When it expires, on the clock's monotonic scale (ms). */
  dueAt(): number;
  /** Its time came: called once, after it left the list. */
  expire(): void;
}

const fire = <T extends Expiring>(list: DueList<T>) => list.fire();

export class DueList<T extends Expiring> {
  private readonly live = new SlotList<T>();
  private timer: TimerHandle | undefined;
  /** The due time the timer is armed for (Infinity: not armed). */
  private armedFor = Number.POSITIVE_INFINITY;
  private readonly onTimer: () => void;

  /**
   * `watchdog`: the timer is a check that runs while work is in flight (an idle limit), not a
   * wait the work asked for (runtime.ts `watchdog`).
   */
  constructor(
    readonly clock: Clock,
    options: { watchdog?: boolean } = {},
  ) {
    const onTimer = callbackOf(this, fire);
    this.onTimer = options.watchdog ? watchdog(onTimer) : onTimer;
  }

  get size(): number {
    return this.live.size;
  }

  /** Watches `x` until `delete` or its time comes. */
  add(x: T): void {
    this.live.add(x);
    const due = x.dueAt();
    if (due < this.armedFor) this.arm(due);
  }

  delete(x: T): void {
    if (this.live.delete(x) && this.live.size === 0) this.disarm();
  }

  /** Removes every member and returns them; the timer stops. */
  takeAll(): T[] {
    this.disarm();
    const all = this.live.members();
    for (const x of all) this.live.delete(x);
    return all;
  }

  /** The timer fired: expires what is due, then re-arms for the earliest due time left. */
  fire(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = this.clock.monotonic();
    const due: T[] = [];
    let next = Number.POSITIVE_INFINITY;
    for (const x of this.live.members()) {
      const at = x.dueAt();
      if (at <= now) due.push(x);
      else if (at < next) next = at;
    }
    for (const x of due) this.live.delete(x);
    if (next < Number.POSITIVE_INFINITY) this.arm(next);
    for (const x of due) x.expire();
  }

  private arm(due: number): void {
    this.disarm();
    this.armedFor = due;
    this.timer = this.clock.setTimeout(this.onTimer, Math.max(0, due - this.clock.monotonic()));
  }

  private disarm(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
  }
}
