/**
 * What a worker's recent answers say about it, besides its breaker: plain data in the worker record
 * (so it lives wherever the fleet lives, a Durable Object included) and one transition per settled
 * attempt (recordSignals). Each signal only *softly* keeps new requests off the worker
 * (candidates.ts drops the rule when it would leave no candidate):
 *  - cooldown: the engine sent `Retry-After` (honoured up to MAX_RETRY_AFTER_MS), or pushed back
 *    (a capacity status, or 503: vLLM's "queue full, try another replica") without one: then
 *    --pushback-cooldown-ms, doubled per consecutive pushback up to --pushback-cooldown-max-ms.
 *    A success ends the escalation (not a cooldown already running).
 *  - quarantine: an attempt was abandoned because the worker made no progress while others did
 *    (`stalled`); it lasts the worker's breaker open timeout, or until an attempt routed to it after
 *    the quarantine began answers.
 *  - latency: an EWMA of the time to first byte of successful (2xx) answers, per request class
 *    (streaming or not), with the time of its last sample (slowness.ts reads it).
 */
import type { RouterConfig } from '../config/schema.ts';
import type { AttemptOutcome } from '../contracts/fleet-api.ts';

/** Requests are compared with requests of the same class: streaming (time to first chunk) or not. */
export type LatencyClass = 'stream' | 'unary';

export interface LatencyEstimate {
  /** Smoothed time to first byte (ms). */
  ms: number;
  /** When the last sample was taken (ms, the fleet clock's `now`). */
  at: number;
}

export interface WorkerSignals {
  /** New requests stay off until then (ms); 0 = not cooling. */
  coolUntil: number;
  /** Capacity pushbacks since the last success (the cooldown's exponent). */
  pushbacks: number;
  /** Quarantined (a stalled attempt) until then (ms); 0 = not quarantined. */
  quarantineUntil: number;
  /** When the current quarantine began: only attempts routed after it can end it. */
  quarantinedAt: number;
  latency: Partial<Record<LatencyClass, LatencyEstimate>>;
}

/** The fleet-wide settings of the signals and of the breakers' ejection limit. */
export interface SignalSettings {
  pushbackCooldownMs: number;
  pushbackCooldownMaxMs: number;
  /** 0 turns the slowness rule off. */
  slowFactor: number;
  slowMarginMs: number;
  /** An estimate older than this is stale (SLOW_RECHECK_MS from the config). */
  slowRecheckMs: number;
  /** --cb-max-ejection-percent. */
  maxEjectionPercent: number;
}

/** An engine's `Retry-After` is honoured up to this long (a bogus hour-long one stays bounded). */
export const MAX_RETRY_AFTER_MS = 300_000;
/** A latency estimate without a sample for this long is stale: its worker is re-measured. */
export const SLOW_RECHECK_MS = 10_000;
/** Weight of a new latency sample in the estimate. */
export const LATENCY_EWMA_WEIGHT = 0.3;
/** Pushback without a capacity status: vLLM answers 503 when its queue is full. */
const QUEUE_FULL_STATUS = 503;

export function signalSettings(config: RouterConfig): SignalSettings {
  const cb = config.circuitBreaker;
  return {
    pushbackCooldownMs: cb.pushbackCooldownMs,
    pushbackCooldownMaxMs: cb.pushbackCooldownMaxMs,
    slowFactor: cb.slowFactor,
    slowMarginMs: cb.slowMarginMs,
    slowRecheckMs: SLOW_RECHECK_MS,
    maxEjectionPercent: cb.maxEjectionPercent,
  };
}

export function initialSignals(): WorkerSignals {
  return { coolUntil: 0, pushbacks: 0, quarantineUntil: 0, quarantinedAt: 0, latency: {} };
}

export const isCooling = (s: WorkerSignals, now: number): boolean => s.coolUntil > now;
export const isQuarantined = (s: WorkerSignals, now: number): boolean => s.quarantineUntil > now;

/** The estimate is recent enough to compare (older ones mean "re-measure"). */
export function isFresh(e: LatencyEstimate, now: number, settings: SignalSettings): boolean {
  return now - e.at < settings.slowRecheckMs;
}

/** What the fleet knows about the settled attempt besides its outcome. */
export interface SettledAttempt {
  now: number;
  /** When the attempt was routed. */
  routedAt: number;
  cls: LatencyClass;
  /** How long a quarantine lasts for this worker (its breaker's open timeout). */
  quarantineMs: number;
}

function isPushback(outcome: AttemptOutcome): boolean {
  if (outcome.status === undefined) return false;
  return outcome.kind === 'neutral' || outcome.status === QUEUE_FULL_STATUS;
}

function cooldown(s: WorkerSignals, outcome: AttemptOutcome, now: number, settings: SignalSettings) {
  const pushback = isPushback(outcome);
  const pushbacks = pushback ? s.pushbacks + 1 : outcome.kind === 'success' ? 0 : s.pushbacks;
  let ms = 0;
  if (outcome.retryAfterMs !== undefined)
    ms = Math.min(Math.max(0, outcome.retryAfterMs), MAX_RETRY_AFTER_MS);
  else if (pushback && settings.pushbackCooldownMs > 0) {
    const escalated = settings.pushbackCooldownMs * 2 ** Math.min(pushbacks - 1, 30);
    ms = Math.min(escalated, settings.pushbackCooldownMaxMs);
  }
  return { pushbacks, coolUntil: ms > 0 ? Math.max(s.coolUntil, now + ms) : s.coolUntil };
}

/** The time to first byte this outcome contributes to its class's estimate, if any (a 2xx answer). */
function latencySample(outcome: AttemptOutcome): number | undefined {
  const sample = outcome.firstByteMs;
  const ok = outcome.kind === 'success' && (outcome.status === undefined || outcome.status < 300);
  return sample === undefined || !ok || outcome.stalled || !(sample >= 0) ? undefined : sample;
}

function latency(s: WorkerSignals, outcome: AttemptOutcome, at: SettledAttempt, settings: SignalSettings) {
  const sample = latencySample(outcome);
  if (sample === undefined) return s.latency;
  const prev = s.latency[at.cls];
  // A stale estimate says nothing about now: the new sample replaces it instead of blending in.
  const ms =
    prev === undefined || !isFresh(prev, at.now, settings)
      ? sample
      : prev.ms + LATENCY_EWMA_WEIGHT * (sample - prev.ms);
  return { ...s.latency, [at.cls]: { ms, at: at.now } };
}

/**
 * The signals after one settled attempt. The usual answer (a success on a worker with nothing
 * against it) only moves its class's fresh latency estimate, and that estimate is updated in place;
 * any other change makes a new object and leaves the input as it was.
 */
export function recordSignals(
  s: WorkerSignals,
  outcome: AttemptOutcome,
  at: SettledAttempt,
  settings: SignalSettings,
): WorkerSignals {
  if (outcome.kind === 'aborted') return s; // the client left: no evidence either way
  if (outcome.kind === 'success' && s.pushbacks === 0 && s.quarantineUntil === 0) {
    // The common case, kept cheap: only the latency estimate can change.
    if (outcome.retryAfterMs === undefined && !outcome.stalled) {
      const sample = latencySample(outcome);
      const prev = s.latency[at.cls];
      if (sample === undefined) return s;
      if (prev !== undefined && isFresh(prev, at.now, settings)) {
        prev.ms += LATENCY_EWMA_WEIGHT * (sample - prev.ms);
        prev.at = at.now;
        return s;
      }
      const next = latency(s, outcome, at, settings);
      return next === s.latency ? s : { ...s, latency: next };
    }
  }
  let { quarantineUntil, quarantinedAt } = s;
  if (outcome.stalled) {
    quarantinedAt = at.now;
    quarantineUntil = Math.max(quarantineUntil, at.now + at.quarantineMs);
  } else if (quarantineUntil > 0 && outcome.status !== undefined && at.routedAt >= quarantinedAt) {
    quarantineUntil = 0; // it answered an attempt sent after the quarantine began
  }
  return {
    ...cooldown(s, outcome, at.now, settings),
    quarantineUntil,
    quarantinedAt,
    latency: latency(s, outcome, at, settings),
  };
}
