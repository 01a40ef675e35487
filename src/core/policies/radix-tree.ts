/**
 * The approximate prefix cache of one pool: a character radix tree whose nodes record which workers
 * (tenants) were sent a prompt through them. Labels are flat copies (`ownCopy`),
 * so a node never keeps a whole request text alive. Matching compares whole labels as strings (a
 * memory compare) and bisects only where the text diverges. A text given in parts (a chat's role
 * labels and messages) is read in place, part by part (tree-text.ts): never joined.
 *
 * Two sizes are kept, both exact sums updated on every change: `size`, the characters held (what
 * vLLM Router's --max-tree-size counts), and `bytes`, the estimated memory of every node, label,
 * array and tenant entry (tree-memory.ts), which is what bounds the tree.
 *
 * Every node but the root sits in a recency list, oldest first. An insert moves the nodes it went
 * through to the newest end, deepest first, so a node is always newer than its descendants and the
 * oldest node is always a leaf. Eviction removes the oldest leaf until both sizes are within their
 * targets (a parent whose last child went becomes a leaf, already in its place): O(1) per node
 * evicted, O(depth) per insert, no scan of the tree.
 */
import type { RoutingText } from '../contracts/routing-text.ts';
import { ownCopy } from './tree-labels.ts';
import { CHILD_MAP_BYTES, labelBytes, TENANT_BYTES } from './tree-memory.ts';
import {
  best,
  holds,
  type Node,
  nodeBytes,
  type PrefixMatch,
  type TreeStats,
  tenantCount,
  tenantsOf,
  type Walk,
  walkDown,
  withoutTenant,
  withTenant,
} from './tree-node.ts';
import { TextReader } from './tree-text.ts';

export type { PrefixMatch, TreeStats } from './tree-node.ts';

export class RadixTree {
  private root: Node = RadixTree.emptyRoot();
  private oldest: Node | null = null;
  private newest: Node | null = null;
  private chars = 0;
  private estimate = 0;
  private readonly perTenant = new Map<string, number>();

  private static emptyRoot(): Node {
    return { label: '', parent: null, children: null, tenants: [], older: null, newer: null };
  }

  /** Characters held by the tree. */
  get size(): number {
    return this.chars;
  }

  /** Estimated bytes of memory held by the tree (the root's fixed cost not included). */
  get bytes(): number {
    return this.estimate;
  }

  /** Characters held for each tenant (a shared prefix counts once per tenant holding it). */
  tenantSizes(): ReadonlyMap<string, number> {
    return this.perTenant;
  }

  /** The longest prefix of `text` held by a tenant that `accept` takes. */
  match(text: RoutingText, accept: (tenant: string) => boolean): PrefixMatch {
    return best(walkDown(this.root, new TextReader(text)), accept);
  }

  /** Records that `tenant` was sent `text`. */
  insert(text: RoutingText, tenant: string): void {
    const reader = new TextReader(text);
    this.record(reader, walkDown(this.root, reader), tenant);
  }

  /**
   * `match`, then records `text` for the tenant `choose` picks given that match: what `match`
   * followed by `insert` does, with one walk (one compare of the text with the labels) instead of two.
   */
  matchAndInsert(
    text: RoutingText,
    accept: (tenant: string) => boolean,
    choose: (match: PrefixMatch) => string,
  ): void {
    const reader = new TextReader(text);
    const walk = walkDown(this.root, reader);
    this.record(reader, walk, choose(best(walk, accept)));
  }

  /** Adds `text` for `tenant` along its walk: a node matched in part is split, the rest is a new leaf. */
  private record(text: TextReader, walk: Walk, tenant: string): void {
    const { path, ends } = walk;
    let node = this.root;
    let pos = 0;
    for (let i = 0; i < path.length; i++) {
      let n = path[i] as Node;
      const end = ends[i] as number;
      if (end - pos < n.label.length) {
        n = this.split(n, end - pos);
        path[i] = n;
      }
      this.touch(n, tenant);
      node = n;
      pos = end;
    }
    if (pos < text.length) {
      const label = text.rest(pos);
      const leaf: Node = {
        label,
        parent: node,
        children: null,
        tenants: tenant,
        older: null,
        newer: null,
      };
      this.childrenOf(node).set(label.charCodeAt(0), leaf);
      this.chars += label.length;
      this.estimate += nodeBytes(leaf);
      this.credit(leaf, tenant);
      path.push(leaf);
    }
    // Deepest first: each node ends up newer than every node below it.
    for (let i = path.length - 1; i >= 0; i--) this.makeNewest(path[i] as Node);
  }

  /**
   * Evicts least-recently-used leaves until at most `targetChars` characters and `targetBytes`
   * estimated bytes remain.
   */
  evict(targetChars: number, targetBytes = Number.POSITIVE_INFINITY): void {
    while ((this.chars > targetChars || this.estimate > targetBytes) && this.oldest) {
      const leaf = this.oldest;
      // Always a leaf (see the recency list above); a subtree would go whole.
      if (leaf.children) this.detachSubtree(leaf);
      else this.detach(leaf);
    }
  }

  /** Forgets a tenant; nodes no tenant holds any more are dropped. */
  removeTenant(tenant: string): void {
    if (!this.perTenant.has(tenant)) return;
    const stack: Node[] = [this.root];
    while (stack.length > 0) {
      const n = stack.pop() as Node;
      if (!n.children) continue;
      for (const c of [...n.children.values()]) {
        if (!holds(c, tenant)) continue;
        c.tenants = withoutTenant(c.tenants, tenant);
        this.estimate -= TENANT_BYTES;
        if (tenantCount(c) === 0) this.detachSubtree(c);
        else stack.push(c);
      }
    }
    this.perTenant.delete(tenant);
  }

  clear(): void {
    this.root = RadixTree.emptyRoot();
    this.oldest = null;
    this.newest = null;
    this.chars = 0;
    this.estimate = 0;
    this.perTenant.clear();
  }

  /** Counts every structure by walking the tree (O(n): for tests and benchmarks only). */
  stats(): TreeStats {
    const out: TreeStats = { nodes: 0, listed: 0, innerNodes: 0, tenantEntries: 0, chars: 0, bytes: 0 };
    for (let n = this.oldest; n; n = n.newer) out.listed++;
    const stack: Node[] = [this.root];
    while (stack.length > 0) {
      const n = stack.pop() as Node;
      if (n.children) {
        out.innerNodes++;
        out.bytes += CHILD_MAP_BYTES;
        for (const c of n.children.values()) stack.push(c);
      }
      if (n === this.root) continue;
      out.nodes++;
      out.tenantEntries += tenantCount(n);
      out.chars += n.label.length;
      out.bytes += nodeBytes(n) + tenantCount(n) * TENANT_BYTES;
    }
    return out;
  }

  private childrenOf(n: Node): Map<number, Node> {
    if (n.children) return n.children;
    this.estimate += CHILD_MAP_BYTES;
    n.children = new Map();
    return n.children;
  }

  private touch(n: Node, tenant: string): void {
    if (holds(n, tenant)) return;
    n.tenants = withTenant(n.tenants, tenant);
    this.credit(n, tenant);
  }

  /** Counts `tenant`, just added to `n`, in the sizes. */
  private credit(n: Node, tenant: string): void {
    this.perTenant.set(tenant, (this.perTenant.get(tenant) ?? 0) + n.label.length);
    this.estimate += TENANT_BYTES;
  }

  /** Moves `n` (listed or not yet) to the newest end of the recency list. */
  private makeNewest(n: Node): void {
    if (this.newest === n) return;
    this.unlist(n);
    n.older = this.newest;
    if (this.newest) this.newest.newer = n;
    else this.oldest = n;
    this.newest = n;
  }

  private unlist(n: Node): void {
    if (n.older) n.older.newer = n.newer;
    else if (this.oldest === n) this.oldest = n.newer;
    if (n.newer) n.newer.older = n.older;
    else if (this.newest === n) this.newest = n.older;
    n.older = null;
    n.newer = null;
  }

  /** Splits `n` after `at` characters; returns the new upper node (same tenants, listed by the caller). */
  private split(n: Node, at: number): Node {
    const parent = n.parent as Node;
    const upper: Node = {
      label: ownCopy(n.label.slice(0, at)),
      parent,
      children: new Map(),
      tenants: n.tenants,
      older: null,
      newer: null,
    };
    this.estimate -= labelBytes(n.label);
    n.label = ownCopy(n.label.slice(at));
    n.parent = upper;
    this.estimate += labelBytes(n.label) + nodeBytes(upper) + CHILD_MAP_BYTES;
    this.estimate += tenantCount(upper) * TENANT_BYTES;
    (upper.children as Map<number, Node>).set(n.label.charCodeAt(0), n);
    (parent.children as Map<number, Node>).set(upper.label.charCodeAt(0), upper);
    return upper;
  }

  /** Removes a leaf (its characters leave every tenant's count; an emptied children map goes). */
  private detach(n: Node): void {
    const parent = n.parent;
    if (parent?.children) {
      parent.children.delete(n.label.charCodeAt(0));
      if (parent.children.size === 0) {
        parent.children = null;
        this.estimate -= CHILD_MAP_BYTES;
      }
    }
    n.parent = null;
    this.unlist(n);
    const len = n.label.length;
    this.chars -= len;
    this.estimate -= nodeBytes(n) + tenantCount(n) * TENANT_BYTES;
    for (const t of tenantsOf(n)) {
      const left = (this.perTenant.get(t) ?? 0) - len;
      if (left > 0) this.perTenant.set(t, left);
      else this.perTenant.delete(t);
    }
  }

  private detachSubtree(n: Node): void {
    const stack: Node[] = [n];
    const order: Node[] = [];
    while (stack.length > 0) {
      const x = stack.pop() as Node;
      order.push(x);
      if (x.children) for (const c of x.children.values()) stack.push(c);
    }
    for (let i = order.length - 1; i >= 0; i--) this.detach(order[i] as Node);
  }
}
