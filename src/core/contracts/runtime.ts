/**
 * Time and randomness, injected into the core by each adapter (and by tests as a fake clock and a
 * seeded random). The system implementations below are the only place in the core that reads the
 * real clock or `Math.random`.
 */

export interface Clock {
  /** Milliseconds since the epoch (wall clock, used for timestamps and expiry). */
  now(): number;
  /** Monotonic milliseconds, used for durations. */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export type TimerHandle = unknown;

/** Returns a float in [0, 1). */
export type Random = () => number;

/**
 * Marks a timer callback as a watchdog: a check that runs while work is in flight (stall checks,
 * idle limits), not a wait the work itself asked for (a backoff). Real clocks ignore the mark;
 * the fake clock of the tests leaves such timers for the test to fire by advancing time.
 */
export const WATCHDOG: unique symbol = Symbol.for('vllm-edge-router.watchdog');

export function watchdog<F extends () => void>(fn: F): F {
  (fn as F & { [WATCHDOG]?: true })[WATCHDOG] = true;
  return fn;
}

export function isWatchdog(fn: () => void): boolean {
  return (fn as { [WATCHDOG]?: true })[WATCHDOG] === true;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export const systemRandom: Random = Math.random;

/** The system source of request ids: version-4 UUIDs from the runtime's crypto. */
export const systemNewId = (): string => crypto.randomUUID();

/** A finished request's report: its metrics, its observers' notice and its log line. */
export interface Reportable {
  report(): void;
}

/**
 * Where a host defers the reports of finished requests to: after its current I/O turn, all of the
 * turn's in one batch (Node: one `setImmediate`). The answer's bytes go out first, and a turn that
 * answers several requests writes them back to back before doing their bookkeeping. Without one,
 * a request is reported as it finishes.
 */
export interface Reports {
  add(item: Reportable): void;
}
