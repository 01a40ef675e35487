/**
 * cache_aware (the default): route a prompt to a worker whose prefix cache most likely holds it.
 *   1. Match the routing text in the pool's radix tree. If the longest prefix an eligible worker
 *      holds covers more than --cache-threshold of the text, take the least-loaded of the workers
 *      holding it (a cache hit); otherwise the least-loaded eligible worker (a miss).
 *   2. Spill gate: if that worker's in-flight load exceeds both mean × --balance-rel-threshold and
 *      mean + --balance-abs-threshold (mean over the eligible workers), take the least-loaded
 *      worker instead (a load-balancing event).
 *   3. Insert the text for the worker finally chosen, so hot prefixes replicate where they spill.
 * The tree holds at most --max-tree-size characters: on overflow, and every --eviction-interval
 * seconds on the injected clock (checked on use, no timer), least-recently-used leaves are evicted
 * down to 90 % of the limit, so overflow evictions stay rare and amortised.
 * Requests without routing text go to the least-loaded worker and leave the tree alone.
 */
import type { RouteInput } from '../contracts/fleet-api.ts';
import type { Policy, PolicyContext, PolicyWorker } from './policy.ts';
import { addGaugeSource, cacheCounters } from './policy-metrics.ts';
import { RadixTree } from './radix-tree.ts';
import { TieBreaker } from './tie-break.ts';

/** Eviction brings the tree down to this fraction of --max-tree-size. */
export const EVICTION_LOW_WATER = 0.9;

export function createCacheAware(ctx: PolicyContext): Policy {
  const { cacheThreshold, balanceAbsThreshold, balanceRelThreshold, evictionIntervalSecs, maxTreeSize } =
    ctx.settings;
  const intervalMs = evictionIntervalSecs * 1000;
  const lowWater = Math.floor(maxTreeSize * EVICTION_LOW_WATER);
  const tree = new RadixTree();
  const ties = new TieBreaker();
  const counters = cacheCounters(ctx.metrics);
  let nextEviction = ctx.clock.monotonic() + intervalMs;
  let exported = false;

  const spill = (candidates: readonly PolicyWorker[], chosen: PolicyWorker): PolicyWorker => {
    if (candidates.length < 2) return chosen;
    let sum = 0;
    for (const w of candidates) sum += w.load;
    const mean = sum / candidates.length;
    if (!(chosen.load > mean * balanceRelThreshold && chosen.load > mean + balanceAbsThreshold))
      return chosen;
    const least = ties.pick(candidates);
    if (least.load >= chosen.load) return chosen;
    counters.balancing.inc();
    return least;
  };

  return {
    name: 'cache_aware',
    select(candidates: readonly PolicyWorker[], input: RouteInput) {
      if (!exported) {
        exported = true;
        addGaugeSource(ctx.metrics, 'vllm_router_tree_size', 'cache_aware tree size in characters', (add) => {
          for (const [worker, chars] of tree.tenantSizes()) add(worker, chars);
        });
      }
      const now = ctx.clock.monotonic();
      if (now >= nextEviction) {
        tree.evict(lowWater);
        nextEviction = now + intervalMs;
      }
      const text = input.text;
      if (!text) return ties.pick(candidates);

      let chosen: PolicyWorker;
      const byId = new Map<string, PolicyWorker>();
      for (const w of candidates) byId.set(w.id, w);
      const match = tree.match(text, (id) => byId.has(id));
      if (match.matched / text.length > cacheThreshold) {
        counters.hits.inc();
        chosen = ties.pick(match.tenants.map((id) => byId.get(id) as PolicyWorker));
      } else {
        counters.misses.inc();
        chosen = ties.pick(candidates);
      }
      chosen = spill(candidates, chosen);
      tree.insert(text, chosen.id, now);
      if (tree.size > maxTreeSize) tree.evict(lowWater);
      return chosen;
    },
    onWorkerRemoved(workerId: string) {
      tree.removeTenant(workerId);
    },
    reset() {
      tree.clear();
      ties.reset();
    },
  };
}
