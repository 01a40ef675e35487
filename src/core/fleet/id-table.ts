/**
 * Values keyed by positive integer ids handed out in increasing order and mostly given back soon
 * (a request's lease): open addressing in two arrays that are reused, linear probing from the id's
 * low bits, and deletion by moving the entries after the hole back (no tombstones). Consecutive ids
 * land in consecutive slots, so a probe rarely goes past its first slot.
 *
 * Why not a Map: a long-lived Map that takes one entry and drops one per request keeps replacing its
 * hash table. It grows when its deleted entries fill it and shrinks again when the requests in
 * flight drop below a quarter of it; a `perf` profile of the router at c32 found those rehashes at
 * about 2 µs per request, all of it before the request was sent (docs/benchmarks.md, round 17).
 * This table allocates only when the number of entries outgrows half its slots, and starts small
 * again when it empties.
 */

const INITIAL_SLOTS = 16;
/** An empty table larger than this starts over at INITIAL_SLOTS (what a burst left behind). */
const KEEP_SLOTS = 1024;

export class IdTable<V> {
  /** 0: an empty slot (ids are positive). */
  private keys = new Float64Array(INITIAL_SLOTS);
  private values: (V | undefined)[] = new Array(INITIAL_SLOTS).fill(undefined);
  private mask = INITIAL_SLOTS - 1;
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(id: number): V | undefined {
    const i = this.find(id);
    return i < 0 ? undefined : this.values[i];
  }

  /** Adds `value` under `id` (a positive integer not in the table). */
  add(id: number, value: V): void {
    if (!(id > 0 && Number.isSafeInteger(id)))
      throw new RangeError(`an id must be a positive integer, not ${id}`);
    if ((this.count + 1) * 2 > this.keys.length) this.resize(this.keys.length * 2);
    this.place(id, value);
    this.count++;
  }

  /** Removes `id`; its value, or undefined when it was not in the table. */
  delete(id: number): V | undefined {
    let hole = this.find(id);
    if (hole < 0) return undefined;
    const { keys, values, mask } = this;
    const value = values[hole];
    // Each entry after the hole, up to the next empty slot, moves back into it unless its home
    // slot lies between the hole and where it stands (then a lookup would no longer reach it).
    for (let j = (hole + 1) & mask; keys[j] !== 0; j = (j + 1) & mask) {
      const home = (keys[j] as number) & mask;
      const stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
      if (stays) continue;
      keys[hole] = keys[j] as number;
      values[hole] = values[j];
      hole = j;
    }
    keys[hole] = 0;
    values[hole] = undefined;
    this.count--;
    if (this.count === 0 && keys.length > KEEP_SLOTS) this.resize(INITIAL_SLOTS);
    return value;
  }

  /** The entries now (a copy: callers may delete while they walk it). */
  entries(): [number, V][] {
    const out: [number, V][] = [];
    this.keys.forEach((id, i) => {
      if (id !== 0) out.push([id, this.values[i] as V]);
    });
    return out;
  }

  /** The slot holding `id`, or -1. */
  private find(id: number): number {
    if (!(id > 0)) return -1; // 0 marks an empty slot
    const { keys, mask } = this;
    for (let i = id & mask; ; i = (i + 1) & mask) {
      const k = keys[i];
      if (k === id) return i;
      if (k === 0) return -1;
    }
  }

  private place(id: number, value: V): void {
    const { keys, mask } = this;
    let i = id & mask;
    while (keys[i] !== 0) i = (i + 1) & mask;
    keys[i] = id;
    this.values[i] = value;
  }

  private resize(slots: number): void {
    const old = this.entries();
    this.keys = new Float64Array(slots);
    this.values = new Array(slots).fill(undefined);
    this.mask = slots - 1;
    for (const [id, value] of old) this.place(id, value);
  }
}
