/**
 * The prefix tree's edges: one open-addressing hash table from (parent row, first code unit of the
 * child's label) to the child row, for the whole tree instead of a Map per inner node. A slot holds
 * only the child's row number (4 bytes); its key is read from the child's row itself (its parent
 * and first code unit, tree-rows.ts), so a lookup is a hash, usually one probe, and the collector has no
 * objects to trace (a typed array's contents are not scanned).
 *
 * Linear probing, grown to twice the slots when more than half are used; a removal shifts later
 * entries of the probe run back (no tombstones, so lookups never slow down with churn). A row's
 * key must not change while it is in the table: remove it first (or `replace` it with a row
 * taking its key over), change it, add it again.
 */

/** Where an edge's key is read from: the child row's parent and its label's first code unit. */
export interface EdgeKeys {
  parentOf(row: number): number;
  codeOf(row: number): number;
}

const EMPTY = -1;
const MIN_SLOTS = 256;

export class ChildIndex {
  private slots = new Int32Array(MIN_SLOTS).fill(EMPTY);
  private mask = MIN_SLOTS - 1;
  private used = 0;

  constructor(private readonly keys: EdgeKeys) {}

  /** Entries held. */
  get size(): number {
    return this.used;
  }

  /** Bytes of the table (every slot, used or not). */
  get bytes(): number {
    return this.slots.byteLength;
  }

  private home(parent: number, code: number): number {
    // Two multiplicative mixes: consecutive rows and codes land far apart.
    const h = Math.imul(parent, 0x9e3779b1) ^ Math.imul(code + 1, 0x85ebca6b);
    return (h ^ (h >>> 15)) & this.mask;
  }

  /** The child of `parent` whose label starts with `code`, or -1. */
  get(parent: number, code: number): number {
    const s = this.slots;
    const keys = this.keys;
    for (let i = this.home(parent, code); ; i = (i + 1) & this.mask) {
      const child = s[i] as number;
      if (child === EMPTY) return EMPTY;
      if (keys.parentOf(child) === parent && keys.codeOf(child) === code) return child;
    }
  }

  /** Adds `child` (its key already in the rows; no other child of its parent has its code). */
  add(child: number): void {
    if ((this.used + 1) * 2 > this.mask + 1) this.resize((this.mask + 1) * 2);
    const s = this.slots;
    let i = this.home(this.keys.parentOf(child), this.keys.codeOf(child));
    while (s[i] !== EMPTY) i = (i + 1) & this.mask;
    s[i] = child;
    this.used++;
  }

  /** Puts `child` where `old` was: `child` has the key `old` was added with (`old` then has none). */
  replace(old: number, child: number): void {
    const s = this.slots;
    let i = this.home(this.keys.parentOf(child), this.keys.codeOf(child));
    for (; s[i] !== old; i = (i + 1) & this.mask)
      if (s[i] === EMPTY) throw new Error('prefix tree: replacing an edge that is not there');
    s[i] = child;
  }

  /** Removes `child` (its key still as it was added). */
  delete(child: number): void {
    const s = this.slots;
    const mask = this.mask;
    let i = this.home(this.keys.parentOf(child), this.keys.codeOf(child));
    for (; s[i] !== child; i = (i + 1) & mask) if (s[i] === EMPTY) return;
    this.used--;
    // Backward shift: move up every later entry of the run whose home is not between the hole and it.
    let hole = i;
    for (let j = (i + 1) & mask; ; j = (j + 1) & mask) {
      const row = s[j] as number;
      if (row === EMPTY) break;
      const home = this.home(this.keys.parentOf(row), this.keys.codeOf(row));
      const movable = hole <= j ? home <= hole || home > j : home <= hole && home > j;
      if (!movable) continue;
      s[hole] = row;
      hole = j;
    }
    s[hole] = EMPTY;
  }

  clear(): void {
    this.slots = new Int32Array(MIN_SLOTS).fill(EMPTY);
    this.mask = MIN_SLOTS - 1;
    this.used = 0;
  }

  private resize(slots: number): void {
    const old = this.slots;
    this.slots = new Int32Array(slots).fill(EMPTY);
    this.mask = slots - 1;
    this.used = 0;
    for (const child of old) if (child !== EMPTY) this.add(child);
  }
}
