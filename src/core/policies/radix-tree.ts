/**
 * The approximate prefix cache of one pool: a character radix tree whose nodes record which workers
 * (tenants) were sent a prompt through them. Matching compares whole labels as strings (a memory
 * compare) and bisects only where the text diverges. A text given in parts (a chat's role labels
 * and messages) is read in place, part by part (tree-text.ts): never joined.
 *
 * Nodes are rows of typed arrays (tree-rows.ts): links, child counts and tenant bit sets are
 * integers, edges live in one hash table (tree-children.ts), and the only objects are the labels,
 * flat strings of their own (`ownCopy`: a node never keeps a whole request text alive). A tree of
 * a quarter of a million nodes is a few buffers and an array of strings, which the collector marks
 * in a fraction of the time a graph of node objects and maps took.
 *
 * Two sizes are kept: `size`, the characters held (what vLLM Router's --max-tree-size counts), and
 * `bytes`, the estimated memory (tree-memory.ts), which is what bounds the tree.
 *
 * Every node but the root sits in a recency list, oldest first. An insert moves the nodes it went
 * through to the newest end, deepest first, so a node is always newer than its descendants and the
 * oldest node is always a leaf. Eviction removes the oldest leaf until both sizes are within their
 * targets (a parent whose last child went becomes a leaf, already in its place): O(1) per node
 * evicted, O(depth) per insert, no scan of the tree.
 */
import type { RoutingText } from '../contracts/routing-text.ts';
import { ownCopy } from './tree-labels.ts';
import { labelBytes, nodeBytes } from './tree-memory.ts';
import { NONE, ROOT, TreeRows } from './tree-rows.ts';
import { TextReader } from './tree-text.ts';

export interface PrefixMatch {
  /** Characters of the text matched by the longest prefix an accepted tenant holds. */
  matched: number;
  /** The accepted tenants holding that prefix (empty when matched is 0). */
  tenants: string[];
}

/** What the tree holds, counted row by row (tests and the memory benchmark). */
export interface TreeStats {
  nodes: number;
  /** Nodes in the recency list (always `nodes`). */
  listed: number;
  innerNodes: number;
  tenantEntries: number;
  chars: number;
  bytes: number;
}

export class RadixTree {
  private readonly rows = new TreeRows();
  private chars = 0;
  private labelTotal = 0;
  /** The last walk: the rows the text ran through from the root and where it stood after each. */
  private path = new Int32Array(64);
  private ends = new Int32Array(64);
  private walked = 0;

  /** Characters held by the tree. */
  get size(): number {
    return this.chars;
  }

  /** Estimated bytes of memory held by the tree. */
  get bytes(): number {
    return this.rows.nodes * nodeBytes(this.rows.tenants.words) + this.labelTotal;
  }

  /** Characters held for each tenant (a shared prefix counts once per tenant holding it). */
  tenantSizes(): ReadonlyMap<string, number> {
    return this.rows.tenants.sizes();
  }

  /** The longest prefix of `text` held by a tenant that `accept` takes. */
  match(text: RoutingText, accept: (tenant: string) => boolean): PrefixMatch {
    this.walk(new TextReader(text));
    return this.best(accept);
  }

  /** Records that `tenant` was sent `text`. */
  insert(text: RoutingText, tenant: string): void {
    const reader = new TextReader(text);
    this.walk(reader);
    this.record(reader, tenant);
  }

  /**
   * `match`, then records `text` for the tenant `choose` picks given that match: what `match`
   * followed by `insert` does, with one walk (one compare of the text with the labels) instead of
   * two. `choose` must not use the tree.
   */
  matchAndInsert(
    text: RoutingText,
    accept: (tenant: string) => boolean,
    choose: (match: PrefixMatch) => string,
  ): void {
    const reader = new TextReader(text);
    this.walk(reader);
    this.record(reader, choose(this.best(accept)));
  }

  /** Walks `text` down from the root: fills `path`/`ends`; the last row may match only in part. */
  private walk(text: TextReader): void {
    const { children, labels } = this.rows;
    let node = ROOT;
    let pos = 0;
    let n = 0;
    while (pos < text.length) {
      const child = children.get(node, text.codeAt(pos));
      if (child === NONE) break;
      const label = labels[child] as string;
      const common = text.common(label, pos);
      pos += common;
      if (n === this.path.length) this.growWalk();
      this.path[n] = child;
      this.ends[n++] = pos;
      if (common < label.length) break;
      node = child;
    }
    this.walked = n;
  }

  /** Tenants of a node also hold every ancestor, so the deepest node with an accepted tenant wins. */
  private best(accept: (tenant: string) => boolean): PrefixMatch {
    const { tenants } = this.rows;
    const found: string[] = [];
    const take = (t: number): void => {
      const id = tenants.idOf(t);
      if (accept(id)) found.push(id);
    };
    for (let i = this.walked - 1; i >= 0; i--) {
      tenants.each(this.path[i] as number, take);
      if (found.length > 0) return { matched: this.ends[i] as number, tenants: found };
    }
    return { matched: 0, tenants: found };
  }

  /** Adds `text` for `tenant` along the last walk: a node matched in part is split, the rest is a new leaf. */
  private record(text: TextReader, tenant: string): void {
    const rows = this.rows;
    const t = rows.tenants.numberOf(tenant, rows.capacity);
    let node = ROOT;
    let pos = 0;
    let n = this.walked;
    for (let i = 0; i < n; i++) {
      let row = this.path[i] as number;
      const end = this.ends[i] as number;
      if (end - pos < (rows.labels[row] as string).length) {
        row = this.split(row, end - pos);
        this.path[i] = row;
      }
      if (!rows.tenants.has(row, t)) rows.tenants.add(row, t, (rows.labels[row] as string).length);
      node = row;
      pos = end;
    }
    if (pos < text.length) {
      const label = text.rest(pos);
      const leaf = rows.add(node, label);
      rows.tenants.add(leaf, t, label.length);
      this.chars += label.length;
      this.labelTotal += labelBytes(label);
      if (n === this.path.length) this.growWalk();
      this.path[n++] = leaf;
    }
    // Deepest first: each node ends up newer than every node below it.
    for (let i = n - 1; i >= 0; i--) rows.makeNewest(this.path[i] as number);
    this.walked = 0;
  }

  /** Splits `row` after `at` characters; returns the new upper row (same tenants, listed by the caller). */
  private split(row: number, at: number): number {
    const rows = this.rows;
    const label = rows.labels[row] as string;
    const upperLabel = ownCopy(label.slice(0, at));
    const lowerLabel = ownCopy(label.slice(at));
    const upper = rows.insertAbove(row, upperLabel, lowerLabel);
    rows.tenants.copy(row, upper);
    this.labelTotal += labelBytes(upperLabel) + labelBytes(lowerLabel) - labelBytes(label);
    return upper;
  }

  /**
   * Evicts least-recently-used leaves until at most `targetChars` characters and `targetBytes`
   * estimated bytes remain.
   */
  evict(targetChars: number, targetBytes = Number.POSITIVE_INFINITY): void {
    const rows = this.rows;
    while ((this.chars > targetChars || this.bytes > targetBytes) && rows.oldest !== NONE) {
      const leaf = rows.oldest;
      // Always a leaf (see the recency list above); were it not, its subtree would go whole.
      if (rows.kidsOf(leaf) === 0) this.drop(leaf);
      else for (const r of rows.subtree(leaf)) this.drop(r);
    }
  }

  /** Forgets a tenant; nodes no tenant holds any more are dropped (a node's tenants hold its parent). */
  removeTenant(tenant: string): void {
    const rows = this.rows;
    const t = rows.tenants.find(tenant);
    if (t < 0) return;
    const orphans: number[] = [];
    rows.eachLive((r) => {
      if (!rows.tenants.has(r, t)) return;
      rows.tenants.remove(r, t, (rows.labels[r] as string).length);
      if (rows.tenants.count(r) === 0) orphans.push(r);
    });
    // Every descendant of an orphan is one too: drop them deepest first, each a leaf by then.
    for (const r of rows.deepestFirst(orphans)) this.drop(r);
    rows.tenants.release(t);
  }

  clear(): void {
    this.rows.clear();
    this.chars = 0;
    this.labelTotal = 0;
    this.walked = 0;
  }

  /** Counts every structure by scanning the rows (O(n): for tests and benchmarks only). */
  stats(): TreeStats {
    const rows = this.rows;
    const out: TreeStats = {
      nodes: 0,
      listed: rows.listed(),
      innerNodes: 0,
      tenantEntries: 0,
      chars: 0,
      bytes: 0,
    };
    let labelTotal = 0;
    rows.eachLive((r) => {
      const label = rows.labels[r] as string;
      out.nodes++;
      if (rows.kidsOf(r) > 0) out.innerNodes++;
      out.tenantEntries += rows.tenants.count(r);
      out.chars += label.length;
      labelTotal += labelBytes(label);
    });
    if (rows.children.size !== out.nodes) throw new Error('prefix tree: edges and nodes disagree');
    out.bytes = out.nodes * nodeBytes(rows.tenants.words) + labelTotal;
    return out;
  }

  /** Removes a leaf: its characters leave the tree and every tenant's count. */
  private drop(leaf: number): void {
    const rows = this.rows;
    const label = rows.labels[leaf] as string;
    rows.tenants.each(leaf, (t) => rows.tenants.remove(leaf, t, label.length));
    this.chars -= label.length;
    this.labelTotal -= labelBytes(label);
    rows.remove(leaf);
  }

  private growWalk(): void {
    const path = new Int32Array(this.path.length * 2);
    const ends = new Int32Array(this.ends.length * 2);
    path.set(this.path);
    ends.set(this.ends);
    this.path = path;
    this.ends = ends;
  }
}
