/** round_robin: a cursor over the eligible workers. */
import type { Policy, PolicyWorker } from './policy.ts';

export function createRoundRobin(): Policy {
  let cursor = 0;
  return {
    name: 'round_robin',
    select(candidates: readonly PolicyWorker[]) {
      const picked = candidates[cursor % candidates.length];
      cursor = (cursor + 1) % 0x40000000;
      return picked;
    },
    reset() {
      cursor = 0;
    },
  };
}
