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

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export const systemRandom: Random = Math.random;

/** 32 lowercase hex digits drawn from `random` (ids that must be unique, not secret). */
export function randomHex32(random: Random): string {
  let out = '';
  for (let i = 0; i < 4; i++) {
    out += Math.floor(random() * 0x1_0000_0000)
      .toString(16)
      .padStart(8, '0');
  }
  return out;
}

/** A version-4 UUID drawn from `random` (request ids), in the usual 8-4-4-4-12 form. */
export function randomUuid(random: Random): string {
  const hex = randomHex32(random);
  const variant = ((Number.parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20)}`;
}
