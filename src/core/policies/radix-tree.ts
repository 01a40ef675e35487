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
 * Nodes sit in a recency list, oldest first, by their last direct use: an insert moves only the
 * node the text ended at to the newest end, so a request touches one place of the list, not one per
 * node of its path (each a cold read when the tree is large). Every leaf is listed. Eviction takes
 * the oldest node: a leaf goes; a node with children is in use through them and leaves the list
 * instead, until its last child goes, when it is listed at the oldest end (its last use was through
 * that child, the oldest of all). So leaves go in the order they were last used and a prefix
 * outlives everything under it: O(1) per node evicted or passed over, no scan of the tree.
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
  /** Nodes in the recency list: every leaf, and inner nodes used directly since eviction passed them. */
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
  /** The text of a `matchForInsert` walk, until it is recorded or another walk begins. */
  private walkedText: TextReader | undefined;

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
    const tenants: string[] = [];
    const matched = this.best(accept, tenants);
    return { matched, tenants };
  }

  /** Records that `tenant` was sent `text`. */
  insert(text: RoutingText, tenant: string): void {
    const reader = new TextReader(text);
    this.walk(reader);
    this.record(reader, tenant);
  }

  /**
   * `match` that keeps its walk for `recordMatched`: a match and an insert of the same text with
   * one walk (one compare of the text with the labels) instead of two, and no result object. The
   * accepted tenants holding the longest prefix go into `into` (emptied first); returns the
   * characters matched. Any other use of the tree in between voids the walk.
   */
  matchForInsert(text: RoutingText, accept: (tenant: string) => boolean, into: string[]): number {
    const reader = new TextReader(text);
    this.walk(reader);
    this.walkedText = reader;
    return this.best(accept, into);
  }

  /** Records the text of the last `matchForInsert` for `tenant` (chosen given its match). */
  recordMatched(tenant: string): void {
    const reader = this.walkedText;
    if (reader === undefined) throw new Error('prefix tree: recordMatched without its matchForInsert');
    this.record(reader, tenant);
  }

  /** Walks `text` down from the root: fills `path`/`ends`; the last row may match only in part. */
  private walk(text: TextReader): void {
    const { children, labels } = this.rows;
    let node = ROOT;
    let pos = 0;
    let n = 0;
    this.walkedText = undefined;
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

  /**
   * Tenants of a node also hold every ancestor, so the deepest node with an accepted tenant wins:
   * its accepted tenants go into `into` (emptied first); returns the characters it matches.
   */
  private best(accept: (tenant: string) => boolean, into: string[]): number {
    if (into.length > 0) into.length = 0;
    for (let i = this.walked - 1; i >= 0; i--) {
      this.rows.tenants.collect(this.path[i] as number, accept, into);
      if (into.length > 0) return this.ends[i] as number;
    }
    return 0;
  }

  /** Adds `text` for `tenant` along the last walk: a node matched in part is split, the rest is a new leaf. */
  private record(text: TextReader, tenant: string): void {
    const rows = this.rows;
    const { path, ends } = this;
    const t = rows.tenants.numberOf(tenant, rows.capacity);
    let n = this.walked;
    const last = n - 1;
    // Only the last row of a walk can be matched in part.
    if (last >= 0) {
      const row = path[last] as number;
      const from = last > 0 ? (ends[last - 1] as number) : 0;
      const matched = (ends[last] as number) - from;
      if (matched < (rows.labels[row] as string).length) path[last] = this.split(row, matched);
    }
    // A tenant of a node holds every ancestor: from the deepest row it holds up, nothing to add.
    let held = last;
    while (held >= 0 && !rows.tenants.has(path[held] as number, t)) held--;
    for (let i = held + 1; i < n; i++) {
      const row = path[i] as number;
      rows.tenants.add(row, t, (rows.labels[row] as string).length);
    }
    const node = last >= 0 ? (path[last] as number) : ROOT;
    const pos = last >= 0 ? (ends[last] as number) : 0;
    if (pos < text.length) {
      const label = text.rest(pos);
      const leaf = rows.add(node, label);
      rows.tenants.add(leaf, t, label.length);
      this.chars += label.length;
      this.labelTotal += labelBytes(label);
      if (n === this.path.length) this.growWalk();
      this.path[n++] = leaf;
    }
    // The node the text ended at is the one used; its ancestors are in use through it.
    if (n > 0) rows.makeNewest(this.path[n - 1] as number);
    this.walked = 0;
    this.walkedText = undefined;
  }

  /**
   * Splits `row` after `at` characters; returns the new upper row (same tenants; unlisted, as it
   * has a child).
   */
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
      const oldest = rows.oldest;
      // A node with children is in use through them: out of the list, not out of the tree.
      if (rows.kidsOf(oldest) === 0) this.drop(oldest);
      else rows.unlist(oldest);
    }
  }

  /** Forgets a tenant; nodes no tenant holds any more are dropped (a node's tenants hold its parent). */
  removeTenant(tenant: string): void {
    const rows = this.rows;
    const t = rows.tenants.find(tenant);
    if (t < 0) return;
    this.walkedText = undefined;
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
    this.walkedText = undefined;
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
      else if (!rows.isListed(r)) throw new Error('prefix tree: a leaf is not in the recency list');
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
    this.walkedText = undefined;
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
