/**
 * The approximate prefix cache of one pool: a character radix tree whose nodes record which workers
 * (tenants) were sent a prompt through them, and when. Labels are flat copies (see `ownCopy`),
 * so a node never keeps a whole request text alive: the size counted in characters is the memory
 * held. Matching compares whole labels as strings (a memory compare) and bisects only where the
 * text diverges. Eviction removes least-recently-used leaves (a parent whose last child went
 * becomes a leaf in turn).
 */

interface Node {
  label: string;
  parent: Node | null;
  /** First code unit of the child's label → child. */
  children: Map<number, Node> | null;
  /** Tenant → last time it was sent a prompt through this node. */
  tenants: Map<string, number>;
  lastAccess: number;
}

export interface PrefixMatch {
  /** Characters of the text matched by the longest prefix an accepted tenant holds. */
  matched: number;
  /** The accepted tenants holding that prefix (empty when matched is 0). */
  tenants: string[];
}

/**
 * A copy of `s` that does not share memory with the string it was sliced from. In V8 a slice of
 * 13+ characters is a view that keeps its whole parent alive (a 100 kB prompt for a 20-character
 * label); slicing a fresh concatenation copies the characters into a string of their own.
 */
export function ownCopy(s: string): string {
  return s.length < 13 ? s : ` ${s}`.slice(1);
}

/**
 * Length of the common prefix of `label` and `text` from `pos`. Slices are views and `===` on
 * flat strings is a memory compare, tens of times faster than a character loop (or `startsWith`)
 * on long prompts; a divergence inside a label is found by bisection.
 */
function commonLength(label: string, text: string, pos: number): number {
  const max = Math.min(label.length, text.length - pos);
  if (text.slice(pos, pos + max) === (max === label.length ? label : label.slice(0, max))) return max;
  let lo = 0; // label[0, lo) matches
  let hi = max - 1; // label[0, hi + 1) does not
  while (lo < hi) {
    if (hi - lo < 32) {
      while (lo < hi && label.charCodeAt(lo) === text.charCodeAt(pos + lo)) lo++;
      return lo;
    }
    const mid = (lo + hi + 1) >>> 1;
    if (text.slice(pos, pos + mid) === label.slice(0, mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export class RadixTree {
  private root: Node = RadixTree.emptyRoot();
  private total = 0;
  private readonly perTenant = new Map<string, number>();

  private static emptyRoot(): Node {
    return { label: '', parent: null, children: null, tenants: new Map(), lastAccess: 0 };
  }

  /** Characters held by the tree. */
  get size(): number {
    return this.total;
  }

  /** Characters held for each tenant (a shared prefix counts once per tenant holding it). */
  tenantSizes(): ReadonlyMap<string, number> {
    return this.perTenant;
  }

  /** The longest prefix of `text` held by a tenant that `accept` takes. */
  match(text: string, accept: (tenant: string) => boolean): PrefixMatch {
    const path: Node[] = [];
    const ends: number[] = [];
    let node = this.root;
    let pos = 0;
    while (pos < text.length) {
      const child = node.children?.get(text.charCodeAt(pos));
      if (!child) break;
      const common = commonLength(child.label, text, pos);
      pos += common;
      path.push(child);
      ends.push(pos);
      if (common < child.label.length) break;
      node = child;
    }
    // Tenants of a node also hold every ancestor, so the deepest node with an accepted tenant wins.
    for (let i = path.length - 1; i >= 0; i--) {
      const tenants: string[] = [];
      for (const t of (path[i] as Node).tenants.keys()) if (accept(t)) tenants.push(t);
      if (tenants.length > 0) return { matched: ends[i] as number, tenants };
    }
    return { matched: 0, tenants: [] };
  }

  /** Records that `tenant` was sent `text` at time `now`. */
  insert(text: string, tenant: string, now: number): void {
    let node = this.root;
    node.lastAccess = now;
    let pos = 0;
    while (pos < text.length) {
      node.children ??= new Map();
      const first = text.charCodeAt(pos);
      let child = node.children.get(first);
      if (!child) {
        const label = ownCopy(text.slice(pos));
        child = { label, parent: node, children: null, tenants: new Map(), lastAccess: now };
        node.children.set(first, child);
        this.total += label.length;
        this.touch(child, tenant, now);
        return;
      }
      const common = commonLength(child.label, text, pos);
      if (common < child.label.length) child = this.split(child, common);
      this.touch(child, tenant, now);
      pos += child.label.length;
      node = child;
    }
  }

  /** Evicts least-recently-used leaves until at most `target` characters remain. */
  evict(target: number): void {
    if (this.total <= target) return;
    const heap = new LeafHeap();
    const stack: Node[] = [this.root];
    while (stack.length > 0) {
      const n = stack.pop() as Node;
      if (!n.children || n.children.size === 0) {
        if (n !== this.root) heap.push(n);
      } else {
        for (const c of n.children.values()) stack.push(c);
      }
    }
    while (this.total > target) {
      const leaf = heap.pop();
      if (!leaf) break;
      const parent = leaf.parent as Node;
      this.detach(leaf);
      if (parent !== this.root && parent.children?.size === 0) heap.push(parent);
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
        if (!c.tenants.delete(tenant)) continue;
        if (c.tenants.size === 0) this.detachSubtree(c);
        else stack.push(c);
      }
    }
    this.perTenant.delete(tenant);
  }

  clear(): void {
    this.root = RadixTree.emptyRoot();
    this.total = 0;
    this.perTenant.clear();
  }

  private touch(n: Node, tenant: string, now: number): void {
    if (!n.tenants.has(tenant))
      this.perTenant.set(tenant, (this.perTenant.get(tenant) ?? 0) + n.label.length);
    n.tenants.set(tenant, now);
    n.lastAccess = now;
  }

  /** Splits `n` after `at` characters; returns the new upper node (same tenants). */
  private split(n: Node, at: number): Node {
    const parent = n.parent as Node;
    const upper: Node = {
      label: ownCopy(n.label.slice(0, at)),
      parent,
      children: new Map(),
      tenants: new Map(n.tenants),
      lastAccess: n.lastAccess,
    };
    n.label = ownCopy(n.label.slice(at));
    n.parent = upper;
    (upper.children as Map<number, Node>).set(n.label.charCodeAt(0), n);
    (parent.children as Map<number, Node>).set(upper.label.charCodeAt(0), upper);
    return upper;
  }

  /** Removes a leaf (its characters leave every tenant's count). */
  private detach(n: Node): void {
    n.parent?.children?.delete(n.label.charCodeAt(0));
    n.parent = null;
    const len = n.label.length;
    this.total -= len;
    for (const t of n.tenants.keys()) {
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

/** A binary min-heap of nodes by last access. */
class LeafHeap {
  private readonly items: Node[] = [];

  push(n: Node): void {
    const a = this.items;
    a.push(n);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((a[p] as Node).lastAccess <= n.lastAccess) break;
      a[i] = a[p] as Node;
      i = p;
    }
    a[i] = n;
  }

  pop(): Node | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || !last) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= a.length) break;
      const r = l + 1;
      const c = r < a.length && (a[r] as Node).lastAccess < (a[l] as Node).lastAccess ? r : l;
      if ((a[c] as Node).lastAccess >= last.lastAccess) break;
      a[i] = a[c] as Node;
      i = c;
    }
    a[i] = last;
    return top;
  }
}
