/**
 * cache_aware (the default): route a prompt to a worker whose prefix cache most likely holds it.
 *   1. Match the routing text in the pool's radix tree. If the longest prefix an eligible worker
 *      holds covers more than --cache-threshold of the text, take the least-loaded of the workers
 *      holding it (a cache hit); otherwise the least-loaded eligible worker (a miss).
 *   2. Spill gate: if that worker's in-flight load exceeds both mean × --balance-rel-threshold and
 *      mean + --balance-abs-threshold (mean over the eligible workers), take the least-loaded
 *      worker instead (a load-balancing event).
 *   3. Insert the text for the worker finally chosen, so hot prefixes replicate where they spill
 *      (along the match's own walk: the text is compared with the tree once per request).
 * The tree holds at most --max-tree-bytes of estimated memory (tree-memory.ts: rows, edges and
 * labels, not just characters) and at most --max-tree-size characters (vLLM Router's bound). On overflow of either, least-recently-used leaves are evicted until the tree is
 * back within both (O(1) per leaf, a leaf or two per insert); every --eviction-interval seconds on
 * the injected clock (checked on use, no timer), down to 90 % of both. A text longer than a
 * sixteenth of --max-tree-bytes in characters (an eighth of the tree at two bytes per character)
 * is matched and inserted by that prefix only, so one huge prompt cannot flush the tree.
 * Requests without routing text go to the least-loaded worker and leave the tree alone.
 * Metrics: vllm_router_tree_size{worker} (characters held per worker, as vLLM Router) and
 * vllm_router_tree_bytes{pool} (the estimate the bound applies to).
 */
import type { RouteInput } from '../contracts/fleet-api.ts';
import { joinText, textLength, textPrefix } from '../contracts/routing-text.ts';
import type { Policy, PolicyContext, PolicyWorker } from './policy.ts';
import { addGaugeSource, cacheCounters } from './policy-metrics.ts';
import { RadixTree } from './radix-tree.ts';
import { tieBreakerFor } from './tie-break.ts';

/** The periodic eviction brings the tree down to this fraction of --max-tree-bytes and --max-tree-size. */
export const EVICTION_LOW_WATER = 0.9;
/** Characters of one text the tree tracks, per byte of --max-tree-bytes. */
const TRACKED_CHARS_PER_BYTE = 1 / 16;

function exportGauges(ctx: PolicyContext, tree: RadixTree): void {
  addGaugeSource(ctx.metrics, 'vllm_router_tree_size', 'cache_aware tree size in characters', (add) => {
    for (const [worker, chars] of tree.tenantSizes()) add(worker, chars);
  });
  const bytes = ctx.metrics.gauge(
    'vllm_router_tree_bytes',
    'cache_aware prefix tree: estimated memory in bytes, per pool',
    ['pool'],
  );
  ctx.metrics.addCollector(() => bytes.labels(ctx.pool).set(tree.bytes));
}

/**
 * The candidates of the decision under way, by id: a scan for a few, a Map for many. One per
 * policy, refilled by each decision and emptied after it (a decision runs to its end before the
 * next begins), so a decision makes no lookup closure or Map of its own.
 */
class Candidates {
  private list: readonly PolicyWorker[] = [];
  private readonly byId = new Map<string, PolicyWorker>();

  fill(list: readonly PolicyWorker[]): void {
    this.empty(); // already empty unless the last decision threw before emptying it
    this.list = list;
    if (list.length > 8) for (const w of list) this.byId.set(w.id, w);
  }

  get(id: string): PolicyWorker | undefined {
    if (this.list.length > 8) return this.byId.get(id);
    for (const w of this.list) if (w.id === id) return w;
    return undefined;
  }

  empty(): void {
    this.list = [];
    if (this.byId.size > 0) this.byId.clear(); // clearing makes a new table, even for an empty Map
  }
}

export function createCacheAware(ctx: PolicyContext): Policy {
  const { cacheThreshold, balanceAbsThreshold, balanceRelThreshold, evictionIntervalSecs } = ctx.settings;
  const { maxTreeSize, maxTreeBytes } = ctx.settings;
  const intervalMs = evictionIntervalSecs * 1000;
  const lowChars = Math.floor(maxTreeSize * EVICTION_LOW_WATER);
  const lowBytes = Math.floor(maxTreeBytes * EVICTION_LOW_WATER);
  const maxTextChars = Math.max(1, Math.floor(maxTreeBytes * TRACKED_CHARS_PER_BYTE));
  const tree = new RadixTree();
  const ties = tieBreakerFor(ctx);
  const counters = cacheCounters(ctx.metrics);
  let nextEviction = ctx.clock.monotonic() + intervalMs;
  let exported = false;
  // Kept between decisions: the candidates, which of them the tree accepts, the match's tenants.
  const current = new Candidates();
  const accept = (id: string): boolean => current.get(id) !== undefined;
  const holder = (id: string): PolicyWorker => current.get(id) as PolicyWorker;
  const held: string[] = [];

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
        exportGauges(ctx, tree);
      }
      const now = ctx.clock.monotonic();
      if (now >= nextEviction) {
        tree.evict(lowChars, lowBytes);
        nextEviction = now + intervalMs;
      }
      const full = input.text;
      const length = full === undefined ? 0 : textLength(full);
      if (full === undefined || length === 0) return ties.pick(candidates);
      const text = length > maxTextChars ? textPrefix(full, maxTextChars) : full;
      const tracked = Math.min(length, maxTextChars);

      // One walk of the tree: the match decides the worker, then the text is recorded for it.
      current.fill(candidates);
      const matched = tree.matchForInsert(text, accept, held);
      let chosen: PolicyWorker;
      if (matched / tracked > cacheThreshold) {
        counters.hits.inc();
        // Most often one worker holds the prefix: no array to pick from.
        chosen = held.length === 1 ? holder(held[0] as string) : ties.pick(held.map(holder));
      } else {
        counters.misses.inc();
        chosen = ties.pick(candidates);
      }
      current.empty();
      chosen = spill(candidates, chosen);
      tree.recordMatched(chosen.id);
      tree.evict(maxTreeSize, maxTreeBytes);
      ctx.sharing?.prefixRecorded(ctx.pool, joinText(text), chosen.id);
      return chosen;
    },
    recordPrefix(text: string, workerId: string) {
      tree.insert(textPrefix(text, maxTextChars), workerId);
      tree.evict(maxTreeSize, maxTreeBytes);
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
