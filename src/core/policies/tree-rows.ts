/**
 * The prefix tree's nodes as rows of one Int32Array, five integers a row side by side: the parent,
 * the two recency neighbours, the child count and the label's first code unit (`parentOf(r)`,
 * `kidsOf(r)`, `codeOf(r)`; the links are private). A node's row is one or two cache lines, so a walk
 * that meets it cold, and the recency list's moves that touch its neighbours, read one place per
 * row instead of one per column. Its label is `labels[r]`, its edge from the parent is in `children`
 * and its tenants in `tenants`. Row 0 is the root (label '', never listed). Freed rows are reused
 * (a free list threaded through the newer link); the array grows by half when full.
 */
import { ChildIndex, type EdgeKeys } from './tree-children.ts';
import { TreeTenants } from './tree-tenants.ts';

export const ROOT = 0;
/** No row: an absent child, the ends of the recency list, the root's parent. */
export const NONE = -1;
/** The parent of a free row. */
const FREE = -2;
const MIN_ROWS = 256;
/** A row's fields, in the order they sit in it. */
const PARENT = 0;
const OLDER = 1;
const NEWER = 2;
const KIDS = 3;
const CODE = 4;
/** Integers per row. */
const ROW_INTS = 5;

export class TreeRows implements EdgeKeys {
  capacity = MIN_ROWS;
  private cells = new Int32Array(MIN_ROWS * ROW_INTS);
  labels: string[] = [''];
  readonly children = new ChildIndex(this);
  readonly tenants = new TreeTenants(MIN_ROWS);
  oldest = NONE;
  newest = NONE;
  /** Rows in use, the root not counted. */
  nodes = 0;
  private freeHead = NONE;
  /** Rows ever handed out (the root included): rows at and above it have never been used. */
  private high = 1;

  constructor() {
    this.set(ROOT, PARENT, NONE);
  }

  parentOf(row: number): number {
    return this.get(row, PARENT);
  }

  /** The first code unit of the row's label (its edge's key, with the parent). */
  codeOf(row: number): number {
    return this.get(row, CODE);
  }

  kidsOf(row: number): number {
    return this.get(row, KIDS);
  }

  /** A new leaf under `parent` labelled `label` (not listed yet). */
  add(parent: number, label: string): number {
    const row = this.take();
    this.set(row, PARENT, parent);
    this.set(row, CODE, label.charCodeAt(0));
    this.labels[row] = label;
    this.set(parent, KIDS, this.get(parent, KIDS) + 1);
    this.children.add(row);
    return row;
  }

  /**
   * Puts a new row labelled `upperLabel` between `row` and its parent; `row` keeps `lowerLabel`
   * (upper + lower = its old label). Returns the new row (no tenants, not listed yet).
   */
  insertAbove(row: number, upperLabel: string, lowerLabel: string): number {
    const upper = this.take();
    this.set(upper, PARENT, this.get(row, PARENT));
    this.set(upper, CODE, this.get(row, CODE));
    this.labels[upper] = upperLabel;
    this.set(upper, KIDS, 1);
    this.children.replace(row, upper); // the same edge (parent, first code unit), a new child
    this.set(row, PARENT, upper);
    this.set(row, CODE, lowerLabel.charCodeAt(0));
    this.labels[row] = lowerLabel;
    this.children.add(row);
    return upper;
  }

  /**
   * Frees a leaf whose tenants are gone: unlinks it from its parent and the recency list. A parent
   * left without children and not listed (eviction passed over it) is listed at the oldest end: it
   * was last used through the leaf that just went, the oldest of all.
   */
  remove(leaf: number): void {
    const parent = this.get(leaf, PARENT);
    this.children.delete(leaf);
    const kids = this.get(parent, KIDS) - 1;
    this.set(parent, KIDS, kids);
    this.unlist(leaf);
    if (kids === 0 && parent !== ROOT && !this.isListed(parent)) this.makeOldest(parent);
    this.set(leaf, PARENT, FREE);
    this.labels[leaf] = '';
    this.set(leaf, NEWER, this.freeHead);
    this.freeHead = leaf;
    this.nodes--;
  }

  /** Moves `row` (listed or not yet) to the newest end of the recency list. */
  makeNewest(row: number): void {
    const newest = this.newest;
    if (newest === row) return;
    this.unlist(row);
    this.set(row, OLDER, newest);
    if (newest !== NONE) this.set(newest, NEWER, row);
    else this.oldest = row;
    this.newest = row;
  }

  private makeOldest(row: number): void {
    const oldest = this.oldest;
    this.set(row, NEWER, oldest);
    if (oldest !== NONE) this.set(oldest, OLDER, row);
    else this.newest = row;
    this.oldest = row;
  }

  /** Whether `row` is in the recency list. */
  isListed(row: number): boolean {
    return this.get(row, OLDER) !== NONE || this.get(row, NEWER) !== NONE || this.oldest === row;
  }

  /** Calls `fn` with every row in use but the root. */
  eachLive(fn: (row: number) => void): void {
    for (let r = 1; r < this.high; r++) if (this.parentOf(r) >= 0) fn(r);
  }

  /** Rows in the recency list (a walk of it). */
  listed(): number {
    let n = 0;
    for (let r = this.oldest; r !== NONE; r = this.get(r, NEWER)) n++;
    return n;
  }

  /** `rows` ordered deepest first, so each is a leaf when its turn comes if they form whole subtrees. */
  deepestFirst(rows: number[]): number[] {
    const depth = (r: number): number => {
      let d = 0;
      for (let a = r; a !== ROOT; a = this.parentOf(a)) d++;
      return d;
    };
    return rows
      .map((r) => ({ r, d: depth(r) }))
      .sort((x, y) => y.d - x.d)
      .map((x) => x.r);
  }

  clear(): void {
    this.capacity = MIN_ROWS;
    this.cells = new Int32Array(MIN_ROWS * ROW_INTS);
    this.set(ROOT, PARENT, NONE);
    this.labels = [''];
    this.children.clear();
    this.tenants.clear(MIN_ROWS);
    this.oldest = NONE;
    this.newest = NONE;
    this.nodes = 0;
    this.freeHead = NONE;
    this.high = 1;
  }

  /** Takes `row` out of the recency list (nothing if it is not in it). */
  unlist(row: number): void {
    if (!this.isListed(row)) return;
    const older = this.get(row, OLDER);
    const newer = this.get(row, NEWER);
    if (older !== NONE) this.set(older, NEWER, newer);
    else this.oldest = newer;
    if (newer !== NONE) this.set(newer, OLDER, older);
    else this.newest = older;
    this.set(row, OLDER, NONE);
    this.set(row, NEWER, NONE);
  }

  /** A row for a new node: a freed one, or the next unused (the array grows when full). */
  private take(): number {
    let row = this.freeHead;
    if (row !== NONE) this.freeHead = this.get(row, NEWER);
    else {
      if (this.high === this.capacity) this.grow();
      row = this.high++;
    }
    this.set(row, OLDER, NONE);
    this.set(row, NEWER, NONE);
    this.set(row, KIDS, 0);
    this.nodes++;
    return row;
  }

  private get(row: number, field: number): number {
    return this.cells[row * ROW_INTS + field] as number;
  }

  private set(row: number, field: number, value: number): void {
    this.cells[row * ROW_INTS + field] = value;
  }

  private grow(): void {
    const old = this.capacity;
    // By half, not double: the spare room a node is charged for (tree-memory.ts) stays small.
    const rows = Math.ceil(old * 1.5);
    const cells = new Int32Array(rows * ROW_INTS);
    cells.set(this.cells);
    this.cells = cells;
    this.tenants.grow(old, rows);
    this.capacity = rows;
  }
}
