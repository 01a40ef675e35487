/**
 * Per-worker active health-check state as plain data + a pure transition (DESIGN.md §9).
 *
 * `failureThreshold` consecutive failed probes mark a healthy worker unhealthy; `successThreshold`
 * consecutive successful probes mark an unhealthy worker healthy again. A worker that has never
 * been healthy (new, or still loading its model at startup) becomes healthy on its first
 * successful probe, so it takes traffic as soon as it can.
 */

export interface HealthSettings {
  failureThreshold: number;
  successThreshold: number;
}

export interface HealthState {
  healthy: boolean;
  consecutiveFailures: number;
  consecutiveSuccesses: number;
  /** When the last probe result was recorded (ms). */
  lastProbeAt?: number;
  /** The last failed probe's error; cleared by a success. */
  lastError?: string;
  /** At least one probe result has been recorded. */
  probedOnce: boolean;
  /** The worker has been healthy at some point (false only for a worker still waiting for its first success). */
  everHealthy: boolean;
}

export interface HealthRecordResult {
  state: HealthState;
  /** `healthy` flipped. */
  changed: boolean;
}

/**
 * A new worker's state: with active probing it is unhealthy until its first successful probe;
 * without probing it is healthy at once.
 */
export function initialHealth(probing: boolean): HealthState {
  return {
    healthy: !probing,
    consecutiveFailures: 0,
    consecutiveSuccesses: 0,
    probedOnce: false,
    everHealthy: !probing,
  };
}

const atLeastOne = (n: number): number => Math.max(1, Math.floor(n));

/** Records one probe result at `now`. */
export function recordProbe(
  state: HealthState,
  settings: HealthSettings,
  ok: boolean,
  now: number,
  error?: string,
): HealthRecordResult {
  if (ok) {
    const consecutiveSuccesses = state.consecutiveSuccesses + 1;
    const healthy =
      state.healthy || !state.everHealthy || consecutiveSuccesses >= atLeastOne(settings.successThreshold);
    const next: HealthState = {
      healthy,
      consecutiveFailures: 0,
      consecutiveSuccesses,
      lastProbeAt: now,
      probedOnce: true,
      everHealthy: state.everHealthy || healthy,
    };
    return { state: next, changed: healthy !== state.healthy };
  }
  const consecutiveFailures = state.consecutiveFailures + 1;
  const healthy = state.healthy && consecutiveFailures < atLeastOne(settings.failureThreshold);
  const next: HealthState = {
    healthy,
    consecutiveFailures,
    consecutiveSuccesses: 0,
    lastProbeAt: now,
    probedOnce: true,
    everHealthy: state.everHealthy,
    lastError: error ?? 'probe failed',
  };
  return { state: next, changed: healthy !== state.healthy };
}
