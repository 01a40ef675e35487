/**
 * rendezvous_hash (highest random weight): the eligible worker with the highest
 * hash(key, workerId) wins. No shared ring to maintain; when a worker leaves, only its own keys
 * move, each to its own second choice. The key is the routing key, else the routing text;
 * requests with neither go to the least-loaded worker.
 */
import type { RouteInput } from '../contracts/fleet-api.ts';
import { hashKeyOf } from './consistent-hash.ts';
import { hash53, hashWith } from './hash.ts';
import type { Policy, PolicyWorker } from './policy.ts';
import { TieBreaker } from './tie-break.ts';

/** The candidate with the highest rendezvous weight for `key` (ids break exact weight ties). */
export function rendezvousPick<W extends PolicyWorker>(candidates: readonly W[], key: string): W {
  const keyHash = hash53(key);
  let best = candidates[0] as W;
  let bestWeight = -1;
  for (const w of candidates) {
    const weight = hashWith(keyHash, w.id);
    if (weight > bestWeight || (weight === bestWeight && w.id < best.id)) {
      best = w;
      bestWeight = weight;
    }
  }
  return best;
}

export function createRendezvousHash(): Policy {
  const ties = new TieBreaker();
  return {
    name: 'rendezvous_hash',
    select(candidates: readonly PolicyWorker[], input: RouteInput) {
      if (candidates.length === 1) return candidates[0];
      const key = hashKeyOf(input);
      return key === undefined ? ties.pick(candidates) : rendezvousPick(candidates, key);
    },
    reset() {
      ties.reset();
    },
  };
}
