/** A manual clock for tests: timers fire only when the test advances time. */
import { type Clock, isWatchdog, type Random } from '../../src/core/contracts/runtime.ts';

interface Timer {
  id: number;
  at: number;
  fn: () => void;
  /** A watchdog (stall check, idle limit): fired only when the test advances time past it. */
  watchdog: boolean;
}

export class FakeClock implements Clock {
  private current: number;
  private timers: Timer[] = [];
  private nextId = 1;

  constructor(start = 1_700_000_000_000) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  monotonic(): number {
    return this.current;
  }

  /** Every delay asked of setTimeout, in order, watchdogs aside (tests read backoff sequences from it). */
  readonly requested: number[] = [];

  setTimeout(fn: () => void, ms: number): unknown {
    const watchdog = isWatchdog(fn);
    if (!watchdog) this.requested.push(ms);
    const timer = { id: this.nextId++, at: this.current + Math.max(0, ms), fn, watchdog };
    this.timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  get pendingTimers(): number {
    return this.timers.length;
  }

  /** Milliseconds until the earliest pending timer (watchdogs only when asked), or undefined when none is pending. */
  nextDueIn(options: { watchdogs?: boolean } = {}): number | undefined {
    let min: number | undefined;
    for (const t of this.timers) {
      if (t.watchdog && !options.watchdogs) continue;
      if (min === undefined || t.at < min) min = t.at;
    }
    return min === undefined ? undefined : min - this.current;
  }

  /** Moves time forward, firing due timers in order. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.current = due.at;
      due.fn();
    }
    this.current = target;
  }
}

/** A seeded PRNG (mulberry32): the same seed gives the same sequence. */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Resolves `work` while firing the fake clock's short timers (backoffs) as they are scheduled, so
 * a test never sleeps: between real I/O turns, time jumps straight to the next timer due within
 * `horizonMs` (longer timers, such as the request deadline, are left alone, and so are watchdogs:
 * a test that wants a stall check to run advances the clock itself).
 */
export async function driveClock<T>(clock: FakeClock, work: Promise<T>, horizonMs = 60_000): Promise<T> {
  let settled = false;
  const result = work.finally(() => {
    settled = true;
  });
  while (!settled) {
    await new Promise((resolve) => setImmediate(resolve));
    const due = clock.nextDueIn();
    if (due !== undefined && due <= horizonMs) clock.advance(due);
  }
  return result;
}
