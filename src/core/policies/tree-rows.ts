/**
 * The prefix tree's nodes as rows of typed arrays: row r's parent, recency neighbours and child
 * count are `parent[r]`, `older[r]`, `newer[r]`, `kids[r]`; its label is `labels[r]` and the
 * label's first code unit `code[r]`; its edge from the parent is in `children` and its tenants in
 * `tenants`. Row 0 is the root (label '', never listed). Freed rows are reused (a free list
 * threaded through `newer`); the arrays grow by half when full.
 */
import { ChildIndex, type EdgeKeys } from './tree-children.ts';
import { TreeTenants } from './tree-tenants.ts';

export const ROOT = 0;
/** No row: an absent child, the ends of the recency list, the root's parent. */
export const NONE = -1;
/** `parent` of a free row. */
const FREE = -2;
const MIN_ROWS = 256;

export class TreeRows implements EdgeKeys {
  capacity = MIN_ROWS;
  parent = new Int32Array(MIN_ROWS);
  older = new Int32Array(MIN_ROWS);
  newer = new Int32Array(MIN_ROWS);
  kids = new Int32Array(MIN_ROWS);
  code = new Uint16Array(MIN_ROWS);
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
    this.parent[ROOT] = NONE;
  }

  /** A new leaf under `parent` labelled `label` (not listed yet). */
  add(parent: number, label: string): number {
    const row = this.take();
    this.parent[row] = parent;
    this.code[row] = label.charCodeAt(0);
    this.labels[row] = label;
    this.kids[parent] = (this.kids[parent] as number) + 1;
    this.children.add(row);
    return row;
  }

  /**
   * Puts a new row labelled `upperLabel` between `row` and its parent; `row` keeps `lowerLabel`
   * (upper + lower = its old label). Returns the new row (no tenants, not listed yet).
   */
  insertAbove(row: number, upperLabel: string, lowerLabel: string): number {
    const upper = this.take();
    const parent = this.parent[row] as number;
    this.children.delete(row); // its key changes
    this.parent[upper] = parent;
    this.code[upper] = this.code[row] as number;
    this.labels[upper] = upperLabel;
    this.kids[upper] = 1;
    this.children.add(upper);
    this.parent[row] = upper;
    this.code[row] = lowerLabel.charCodeAt(0);
    this.labels[row] = lowerLabel;
    this.children.add(row);
    return upper;
  }

  /** Frees a leaf whose tenants are gone: unlinks it from its parent and the recency list. */
  remove(leaf: number): void {
    const parent = this.parent[leaf] as number;
    this.children.delete(leaf);
    this.kids[parent] = (this.kids[parent] as number) - 1;
    this.unlist(leaf);
    this.parent[leaf] = FREE;
    this.labels[leaf] = '';
    this.newer[leaf] = this.freeHead;
    this.freeHead = leaf;
    this.nodes--;
  }

  /** Moves `row` (listed or not yet) to the newest end of the recency list. */
  makeNewest(row: number): void {
    if (this.newest === row) return;
    this.unlist(row);
    this.older[row] = this.newest;
    if (this.newest !== NONE) this.newer[this.newest] = row;
    else this.oldest = row;
    this.newest = row;
  }

  /** Calls `fn` with every row in use but the root. */
  eachLive(fn: (row: number) => void): void {
    for (let r = 1; r < this.high; r++) if ((this.parent[r] as number) >= 0) fn(r);
  }

  /** Rows in the recency list (a walk of it). */
  listed(): number {
    let n = 0;
    for (let r = this.oldest; r !== NONE; r = this.newer[r] as number) n++;
    return n;
  }

  /** `row` and its descendants, deepest first (a scan: for the rare eviction of an inner node). */
  subtree(row: number): number[] {
    const inside: number[] = [];
    this.eachLive((r) => {
      for (let a = r; a !== NONE; a = this.parent[a] as number) {
        if (a === row) {
          inside.push(r);
          return;
        }
      }
    });
    return this.deepestFirst(inside);
  }

  /** `rows` ordered deepest first, so each is a leaf when its turn comes if they form whole subtrees. */
  deepestFirst(rows: number[]): number[] {
    const depth = (r: number): number => {
      let d = 0;
      for (let a = r; a !== ROOT; a = this.parent[a] as number) d++;
      return d;
    };
    return rows
      .map((r) => ({ r, d: depth(r) }))
      .sort((x, y) => y.d - x.d)
      .map((x) => x.r);
  }

  clear(): void {
    this.capacity = MIN_ROWS;
    this.parent = new Int32Array(MIN_ROWS);
    this.older = new Int32Array(MIN_ROWS);
    this.newer = new Int32Array(MIN_ROWS);
    this.kids = new Int32Array(MIN_ROWS);
    this.code = new Uint16Array(MIN_ROWS);
    this.parent[ROOT] = NONE;
    this.labels = [''];
    this.children.clear();
    this.tenants.clear(MIN_ROWS);
    this.oldest = NONE;
    this.newest = NONE;
    this.nodes = 0;
    this.freeHead = NONE;
    this.high = 1;
  }

  private unlist(row: number): void {
    const older = this.older[row] as number;
    const newer = this.newer[row] as number;
    const listed = older !== NONE || newer !== NONE || this.oldest === row;
    if (!listed) return;
    if (older !== NONE) this.newer[older] = newer;
    else this.oldest = newer;
    if (newer !== NONE) this.older[newer] = older;
    else this.newest = older;
    this.older[row] = NONE;
    this.newer[row] = NONE;
  }

  /** A row for a new node: a freed one, or the next unused (the arrays grow when full). */
  private take(): number {
    let row = this.freeHead;
    if (row !== NONE) this.freeHead = this.newer[row] as number;
    else {
      if (this.high === this.capacity) this.grow();
      row = this.high++;
    }
    this.older[row] = NONE;
    this.newer[row] = NONE;
    this.kids[row] = 0;
    this.nodes++;
    return row;
  }

  private grow(): void {
    const old = this.capacity;
    // By half, not double: the spare room a node is charged for (tree-memory.ts) stays small.
    const rows = Math.ceil(old * 1.5);
    const widen = (a: Int32Array): Int32Array<ArrayBuffer> => {
      const b = new Int32Array(rows);
      b.set(a);
      return b;
    };
    this.parent = widen(this.parent);
    this.older = widen(this.older);
    this.newer = widen(this.newer);
    this.kids = widen(this.kids);
    const code = new Uint16Array(rows);
    code.set(this.code);
    this.code = code;
    this.tenants.grow(old, rows);
    this.capacity = rows;
  }
}
