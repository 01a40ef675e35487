/** random: uniform over the eligible workers, using the injected random source. */
import type { Policy, PolicyContext, PolicyWorker } from './policy.ts';

export function createRandom(ctx: PolicyContext): Policy {
  return {
    name: 'random',
    select(candidates: readonly PolicyWorker[]) {
      return candidates[Math.floor(ctx.random() * candidates.length)];
    },
  };
}
