// Failure plans of the simulated engine: which inference requests fail (seeded, reproducible).
import type { FailureMode, FailurePlan } from './types.ts';

export const FAILURE_MODES: readonly FailureMode[] = [
  'none',
  'status',
  'hang',
  'reset',
  'midstream',
  'stall',
];

/** A small seeded PRNG (32-bit state, splitmix-style output mixing); values in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
    z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
    z ^= z >>> 15;
    return (z >>> 0) / 4294967296;
  };
}

/** Throws a RangeError naming the offending field; returns a normalized copy. */
export function validatePlan(plan: FailurePlan): FailurePlan {
  if (!FAILURE_MODES.includes(plan.mode)) {
    throw new RangeError(
      `failure.mode must be one of ${FAILURE_MODES.join(', ')} (got ${String(plan.mode)})`,
    );
  }
  const out: FailurePlan = { mode: plan.mode };
  if (plan.status !== undefined) {
    if (!Number.isInteger(plan.status) || plan.status < 100 || plan.status > 599) {
      throw new RangeError(`failure.status must be an HTTP status 100..599 (got ${plan.status})`);
    }
    out.status = plan.status;
  }
  if (plan.rate !== undefined) {
    if (!(plan.rate >= 0 && plan.rate <= 1)) {
      throw new RangeError(`failure.rate must be a fraction 0..1 (got ${plan.rate})`);
    }
    out.rate = plan.rate;
  }
  if (plan.first !== undefined) {
    if (!Number.isInteger(plan.first) || plan.first < 0) {
      throw new RangeError(`failure.first must be an integer >= 0 (got ${plan.first})`);
    }
    out.first = plan.first;
  }
  if (plan.cutAfterChunks !== undefined) {
    if (!Number.isInteger(plan.cutAfterChunks) || plan.cutAfterChunks < 0) {
      throw new RangeError(`failure.cutAfterChunks must be an integer >= 0 (got ${plan.cutAfterChunks})`);
    }
    out.cutAfterChunks = plan.cutAfterChunks;
  }
  if (plan.retryAfter !== undefined && plan.retryAfter !== '') out.retryAfter = String(plan.retryAfter);
  if (plan.body !== undefined && plan.body !== '') out.body = String(plan.body);
  return out;
}

export interface FailurePlanner {
  /** Decide for the next inference request: the failure to inject, or null. */
  next(): Exclude<FailureMode, 'none'> | null;
}

/** A planner over one plan; create a new one to restart the counter and the PRNG. */
export function createFailurePlanner(plan: FailurePlan, seed: number): FailurePlanner {
  const random = seededRandom(seed);
  let seen = 0;
  return {
    next() {
      if (plan.mode === 'none') return null;
      seen++;
      let fail: boolean;
      if (plan.first !== undefined && plan.first > 0) fail = seen <= plan.first;
      else if (plan.rate !== undefined) fail = plan.rate > 0 && random() < plan.rate;
      else fail = true;
      return fail ? plan.mode : null;
    },
  };
}

/** Token chunks sent before a midstream cut (or a stall), for a response of `tokens` tokens. */
export function cutPoint(plan: FailurePlan, tokens: number): number {
  const wanted = plan.cutAfterChunks ?? (plan.mode === 'stall' ? 0 : Math.max(1, Math.floor(tokens / 2)));
  return Math.min(wanted, tokens);
}
