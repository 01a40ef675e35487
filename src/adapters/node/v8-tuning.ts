/**
 * V8 settings the router applies to itself at startup (Node).
 *
 * Allocation-site pretenuring is off. V8 watches how many objects from each allocation site
 * survive a young collection and, past a threshold, allocates that site's objects in the old
 * generation from then on. Under a burst that saturates the router, requests wait long enough for
 * their objects to survive, so V8 pretenures sites whose objects normally live one request. After
 * the burst those objects still go to the old generation, where only a full collection frees them,
 * and everything young they point to survives every young collection until then: measured on a
 * router after 20 s at saturation and then serving streams at c32, each young collection promoted
 * 1.4-2.5 MB (91-97 % of what it had kept) and paused 5-17 ms, against under 0.4 MB and 1-4 ms for
 * the same load on a router that never saw the burst, or with pretenuring off
 * (docs/benchmarks.md, round 18). Under steady load the router measured the same without it (CPU
 * per request, young collections, `cache_aware` at 8 KB): its long-lived data (the prefix tree's
 * typed arrays and labels, the fleet) is small beside its per-request garbage.
 *
 * A `--allocation-site-pretenuring` or `--no-allocation-site-pretenuring` given to node itself
 * (its command line or NODE_OPTIONS) is left as given.
 */
import { setFlagsFromString } from 'node:v8';

const FLAG = 'allocation-site-pretenuring';

/** The V8 flags to set, given node's own command line and NODE_OPTIONS. */
export function v8Tuning(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const given = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)];
  const named = given.some((arg) => arg.replace(/_/g, '-').replace(/^--(no-)?/, '') === FLAG);
  return named ? [] : [`--no-${FLAG}`];
}

export function applyV8Tuning(): void {
  for (const flag of v8Tuning(process.execArgv, process.env.NODE_OPTIONS)) setFlagsFromString(flag);
}
