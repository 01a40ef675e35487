/**
 * The idle limit of a relayed stream (stream-relay.ts): the longest silence between two chunks
 * before the stream is cut.
 */
import type { Clock } from '../contracts/runtime.ts';
import { DueList, type Expiring } from './due-list.ts';

/**
 * Longest silence between chunks before the stream is cut (ms; absent or 0: none), and the list
 * that watches it: the router's, one timer for every stream, or when absent one of the stream's
 * own (a Worker's isolate, where no timer may outlive the request that set it).
 */
export interface StreamIdle {
  ms: number;
  clock: Clock;
  watch?: DueList<Expiring> | undefined;
}

export class StreamIdleError extends Error {
  override readonly name = 'StreamIdleError';
}

/**
 * Cuts a silent stream: a member of a list of expiring things (due-list.ts), due its idle limit
 * after its last chunk (chunks just note the time). The list is the router's, one timer for every
 * stream, or the guard's own. Its callbacks, like the relay's, are made with `callbackOf`
 * (contracts/callback-of.ts says why).
 */
export class IdleGuard implements Expiring {
  slot = -1;
  lastChunkAt: number;
  expired = false;
  private readonly ms: number;
  private readonly watch: DueList<Expiring>;

  constructor(
    idle: StreamIdle,
    private readonly onExpire: () => void,
  ) {
    this.ms = idle.ms;
    this.lastChunkAt = idle.clock.monotonic();
    this.watch = idle.watch ?? new DueList(idle.clock, { watchdog: true });
    this.watch.add(this);
  }

  dueAt(): number {
    return this.lastChunkAt + this.ms;
  }

  expire(): void {
    this.expired = true;
    this.onExpire();
  }

  stop(): void {
    this.watch.delete(this);
  }
}
