/**
 * Per-worker circuit breaker as plain data + pure transitions (DESIGN.md §8).
 *
 * closed ──(failureThreshold consecutive failures inside windowDurationSecs)──▶ open
 * open ──(timeoutDurationSecs elapsed, noticed by the next gate)──▶ half_open
 * half_open ──(successThreshold consecutive probe successes)──▶ closed
 * half_open ──(one probe failure)──▶ open
 *
 * State is JSON (it may live in a Durable Object's storage); every function takes `now` (ms) and
 * returns a new state object, never mutating its input. No timers: the open → half-open move
 * happens when a gate asks at or after the deadline.
 *
 * Outcomes: `failure` (transport error, retryable status), `success` (anything else, including
 * 4xx), `neutral` (capacity status such as 429: neither, but frees a probe slot), `aborted` (the
 * client left: nothing, but frees a probe slot).
 *
 * Stale outcomes: each state change bumps `generation`. An outcome recorded with the generation
 * its gate returned is ignored when the breaker has moved on since (e.g. a request admitted while
 * closed that fails after the circuit opened, or a probe from an earlier half-open period). Without
 * a generation, outcomes of non-probe requests are ignored while open/half-open, and outcomes of
 * probes are ignored while open.
 */

export interface BreakerSettings {
  failureThreshold: number;
  successThreshold: number;
  timeoutDurationSecs: number;
  windowDurationSecs: number;
  disabled: boolean;
}

export type BreakerStateName = 'closed' | 'open' | 'half_open';

export interface BreakerState {
  state: BreakerStateName;
  /** Timestamps (ms) of the current run of consecutive failures still inside the window (closed only). */
  failures: number[];
  /** When the circuit last opened (open only). */
  openedAt?: number;
  /** Probes admitted and not yet recorded (half_open only). */
  probesInFlight: number;
  /** Consecutive probe successes (half_open only). */
  probeSuccesses: number;
  /** Bumped on every state change; lets late outcomes from an earlier state be recognised. */
  generation: number;
}

export type BreakerOutcome = 'success' | 'failure' | 'neutral' | 'aborted';

export interface BreakerTransition {
  from: BreakerStateName;
  to: BreakerStateName;
}

export interface BreakerGateResult {
  allow: boolean;
  state: BreakerState;
  /** The admitted request is a half-open probe: pass `wasProbe = true` when recording it. */
  probe: boolean;
  /** The state's generation at admission: pass it back to `breakerRecord`. */
  generation: number;
  /** Set when asking the gate moved the breaker (open → half_open). */
  transition?: BreakerTransition;
}

export interface BreakerRecordResult {
  state: BreakerState;
  transition?: BreakerTransition;
}

export function initialBreaker(): BreakerState {
  return { state: 'closed', failures: [], probesInFlight: 0, probeSuccesses: 0, generation: 0 };
}

/** The `vllm_router_cb_state` gauge value: closed 0, open 1, half_open 2. */
export function breakerGaugeValue(state: BreakerState | BreakerStateName): number {
  const name = typeof state === 'string' ? state : state.state;
  return name === 'closed' ? 0 : name === 'open' ? 1 : 2;
}

const atLeastOne = (n: number): number => Math.max(1, Math.floor(n));

function moveTo(
  from: BreakerState,
  to: BreakerStateName,
  now: number,
): { state: BreakerState; transition: BreakerTransition } {
  const state: BreakerState = {
    state: to,
    failures: [],
    probesInFlight: 0,
    probeSuccesses: 0,
    generation: from.generation + 1,
  };
  if (to === 'open') state.openedAt = now;
  return { state, transition: { from: from.state, to } };
}

/** A disabled breaker is always closed and empty. */
function normaliseDisabled(state: BreakerState, now: number): BreakerRecordResult {
  if (state.state !== 'closed') return moveTo(state, 'closed', now);
  if (state.failures.length > 0) return { state: { ...state, failures: [] } };
  return { state };
}

/** True when the open circuit's timeout has elapsed at `now`. */
function timeoutElapsed(state: BreakerState, settings: BreakerSettings, now: number): boolean {
  return now - (state.openedAt ?? now) >= settings.timeoutDurationSecs * 1000;
}

/**
 * Whether the breaker would admit a request at `now`, without taking a probe slot. For eligibility
 * filtering before a policy picks; the chosen worker must still pass `breakerGate`.
 */
export function breakerAvailable(state: BreakerState, settings: BreakerSettings, now: number): boolean {
  if (settings.disabled) return true;
  switch (state.state) {
    case 'closed':
      return true;
    case 'open':
      return timeoutElapsed(state, settings, now);
    case 'half_open':
      return state.probesInFlight < atLeastOne(settings.successThreshold);
  }
}

/** Asks to send one request now. Admitting a half-open probe takes one of `successThreshold` slots. */
export function breakerGate(state: BreakerState, settings: BreakerSettings, now: number): BreakerGateResult {
  if (settings.disabled) {
    const r = normaliseDisabled(state, now);
    return {
      allow: true,
      probe: false,
      state: r.state,
      generation: r.state.generation,
      transition: r.transition,
    };
  }
  let current = state;
  let transition: BreakerTransition | undefined;
  if (current.state === 'closed') {
    return { allow: true, probe: false, state: current, generation: current.generation };
  }
  if (current.state === 'open') {
    if (!timeoutElapsed(current, settings, now)) {
      // A wall clock that stepped backwards would keep the circuit open for the size of the step:
      // re-anchor "opened in the future" to now, so the wait stays bounded by the timeout.
      if ((current.openedAt ?? now) > now) current = { ...current, openedAt: now };
      return { allow: false, probe: false, state: current, generation: current.generation };
    }
    ({ state: current, transition } = moveTo(current, 'half_open', now));
  }
  if (current.probesInFlight >= atLeastOne(settings.successThreshold)) {
    return { allow: false, probe: false, state: current, generation: current.generation, transition };
  }
  const next = { ...current, probesInFlight: current.probesInFlight + 1 };
  return { allow: true, probe: true, state: next, generation: next.generation, transition };
}

function recordClosed(
  state: BreakerState,
  settings: BreakerSettings,
  outcome: BreakerOutcome,
  now: number,
): BreakerRecordResult {
  if (outcome === 'success') {
    return state.failures.length === 0 ? { state } : { state: { ...state, failures: [] } };
  }
  if (outcome !== 'failure') return { state }; // neutral and aborted count as nothing
  const windowMs = settings.windowDurationSecs * 1000;
  const threshold = atLeastOne(settings.failureThreshold);
  // The window is real: failures at least a window old are forgotten. The list stays shorter than
  // `threshold` (reaching it opens the circuit and empties it), so storage is bounded.
  const failures = [...state.failures.filter((t) => now - t < windowMs), now];
  if (failures.length >= threshold) return moveTo(state, 'open', now);
  return { state: { ...state, failures } };
}

function recordHalfOpen(
  state: BreakerState,
  settings: BreakerSettings,
  outcome: BreakerOutcome,
  now: number,
): BreakerRecordResult {
  const released = { ...state, probesInFlight: Math.max(0, state.probesInFlight - 1) };
  switch (outcome) {
    case 'failure':
      return moveTo(state, 'open', now);
    case 'success': {
      const probeSuccesses = state.probeSuccesses + 1;
      if (probeSuccesses >= atLeastOne(settings.successThreshold)) return moveTo(state, 'closed', now);
      return { state: { ...released, probeSuccesses } };
    }
    default:
      return { state: released }; // neutral / aborted: only the slot is freed
  }
}

/**
 * Records how a request admitted by `breakerGate` ended. `wasProbe` and `generation` are what the
 * gate returned for that request (`generation` is optional but makes late outcomes safe).
 */
export function breakerRecord(
  state: BreakerState,
  settings: BreakerSettings,
  outcome: BreakerOutcome,
  now: number,
  wasProbe: boolean,
  generation?: number,
): BreakerRecordResult {
  if (settings.disabled) return normaliseDisabled(state, now);
  if (generation !== undefined && generation !== state.generation) return { state };
  switch (state.state) {
    case 'closed':
      return recordClosed(state, settings, outcome, now);
    case 'open':
      return { state };
    case 'half_open':
      return wasProbe ? recordHalfOpen(state, settings, outcome, now) : { state };
  }
}
