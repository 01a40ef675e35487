/**
 * power_of_two: two distinct eligible workers drawn with the injected random; the one with fewer
 * requests in flight wins, ties by processed count, then alternating (never always the first).
 */
import type { Policy, PolicyContext, PolicyWorker } from './policy.ts';
import { tieBreakerFor } from './tie-break.ts';

export function createPowerOfTwo(ctx: PolicyContext): Policy {
  const ties = tieBreakerFor(ctx);
  return {
    name: 'power_of_two',
    select(candidates: readonly PolicyWorker[]) {
      const n = candidates.length;
      if (n <= 1) return candidates[0];
      const i = Math.floor(ctx.random() * n) % n;
      // A second index drawn from the other n - 1 workers: distinct by construction.
      const j = (i + 1 + (Math.floor(ctx.random() * (n - 1)) % (n - 1))) % n;
      return ties.lesser(candidates[i] as PolicyWorker, candidates[j] as PolicyWorker);
    },
    reset() {
      ties.reset();
    },
  };
}
