/**
 * The members of a short-lived group (the requests in flight, a worker's attempts waiting for
 * their first byte) in reused array slots, each member holding the number of its own slot.
 *
 * Why not a Set: a long-lived Set that takes and drops one entry per request keeps replacing its
 * hash table, and under load that kept finished requests reachable through young-generation
 * collections until V8 promoted them. With the requests in flight in a Set, the router promoted
 * about 2 MB per young collection at 32 requests in flight (a bare proxy: 0.4 MB) and each
 * collection paused 4-11 ms; with the same requests in slots that are overwritten when a member
 * leaves, under 0.1 MB and about 1 ms (docs/benchmarks.md, round 5). A small standalone program
 * shows the same: per-item add and delete on a Set or Map, with a few items living longer than
 * the rest, promoted 10-20 times what reused array slots did.
 */

/** A member: `slot` is its place in the list, -1 while it is in none. */
export interface Slotted {
  slot: number;
}

export class SlotList<T extends Slotted> {
  private readonly items: (T | undefined)[] = [];
  private readonly free: number[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Adds `x` (no-op when it is already in a list). */
  add(x: T): void {
    if (x.slot >= 0) return;
    const slot = this.free.length > 0 ? (this.free.pop() as number) : this.items.length;
    this.items[slot] = x;
    x.slot = slot;
    this.count++;
  }

  /** Removes `x`; false when it was not a member. */
  delete(x: T): boolean {
    const slot = x.slot;
    if (slot < 0 || this.items[slot] !== x) return false;
    this.items[slot] = undefined;
    x.slot = -1;
    this.count--;
    if (this.count === 0) {
      // Empty again: drop the slots a burst left behind, so walks stay as short as the group.
      this.items.length = 0;
      this.free.length = 0;
    } else this.free.push(slot);
    return true;
  }

  /** The members now, in no particular order (a copy: callers may remove members while they walk it). */
  members(): T[] {
    const out: T[] = [];
    for (const x of this.items) if (x !== undefined) out.push(x);
    return out;
  }

  /** The member with the smallest `key`, or undefined when the list is empty. */
  min(key: (x: T) => number): T | undefined {
    let best: T | undefined;
    let bestKey = Number.POSITIVE_INFINITY;
    for (const x of this.items) {
      if (x === undefined) continue;
      const k = key(x);
      if (best === undefined || k < bestKey) {
        best = x;
        bestKey = k;
      }
    }
    return best;
  }
}
