/**
 * The exchanges in flight, so a shutdown can cut the ones still running when the grace period
 * ends. A slot list rather than a listener on a shared AbortSignal: adding and removing an event
 * listener per request costs several times more than a slot, on the hot path. Not a Set either:
 * slot-list.ts says why.
 */
import { SlotList, type Slotted } from './slot-list.ts';

export interface Stoppable extends Slotted {
  /** Cuts the request: the router is shutting down. */
  cutForShutdown(): void;
}

export class InFlight {
  private readonly live = new SlotList<Stoppable>();
  private stoppedFlag = false;

  get stopped(): boolean {
    return this.stoppedFlag;
  }

  /** Tracks `x` until `delete`; cut at once when the router already stopped. */
  add(x: Stoppable): void {
    if (this.stoppedFlag) x.cutForShutdown();
    else this.live.add(x);
  }

  delete(x: Stoppable): void {
    this.live.delete(x);
  }

  /** Cuts every request in flight, and every later one. Idempotent. */
  stop(): void {
    if (this.stoppedFlag) return;
    this.stoppedFlag = true;
    const cut = this.live.members();
    for (const x of cut) this.live.delete(x);
    for (const x of cut) x.cutForShutdown();
  }
}
