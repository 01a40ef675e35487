/** A binary min-heap of tree nodes by last access: the eviction order of the prefix tree. */
export class LeafHeap<T extends { lastAccess: number }> {
  private readonly items: T[] = [];

  get length(): number {
    return this.items.length;
  }

  push(n: T): void {
    const a = this.items;
    a.push(n);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((a[p] as T).lastAccess <= n.lastAccess) break;
      a[i] = a[p] as T;
      i = p;
    }
    a[i] = n;
  }

  pop(): T | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || !last) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= a.length) break;
      const r = l + 1;
      const c = r < a.length && (a[r] as T).lastAccess < (a[l] as T).lastAccess ? r : l;
      if ((a[c] as T).lastAccess >= last.lastAccess) break;
      a[i] = a[c] as T;
      i = c;
    }
    a[i] = last;
    return top;
  }
}
