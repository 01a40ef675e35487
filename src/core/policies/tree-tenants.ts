/**
 * The prefix tree's tenants (workers): each gets a small number, and each tree row a bit set of the
 * tenants sent a prompt through it, `words` 32-bit words per row in one Uint32Array (one word up to
 * 32 workers a pool; it widens, rarely, when more arrive). A tenant's number is freed when it holds
 * no characters any more, so worker churn does not widen the rows for good.
 */

export class TreeTenants {
  /** Words per row. */
  words = 1;
  bits: Uint32Array;
  private readonly ids: (string | undefined)[] = [];
  private readonly numbers = new Map<string, number>();
  private readonly free: number[] = [];
  /** Characters held, per tenant number. */
  private readonly chars: number[] = [];

  constructor(rows: number) {
    this.bits = new Uint32Array(rows);
  }

  /** The tenant's number, or -1 when it holds nothing. */
  find(id: string): number {
    return this.numbers.get(id) ?? -1;
  }

  /** The tenant's number, given one if it has none. */
  numberOf(id: string, rows: number): number {
    const known = this.numbers.get(id);
    if (known !== undefined) return known;
    const t = this.free.pop() ?? this.ids.length;
    if (t >= this.words * 32) this.widen(rows, this.words * 2);
    this.ids[t] = id;
    this.numbers.set(id, t);
    this.chars[t] = 0;
    return t;
  }

  idOf(t: number): string {
    return this.ids[t] as string;
  }

  /** Rows `rows` can hold (the tree grew). */
  grow(oldRows: number, rows: number): void {
    const bits = new Uint32Array(rows * this.words);
    bits.set(this.bits.subarray(0, oldRows * this.words));
    this.bits = bits;
  }

  has(row: number, t: number): boolean {
    return (((this.bits[row * this.words + (t >>> 5)] as number) >>> (t & 31)) & 1) === 1;
  }

  /** Adds tenant `t` to `row`, counting `chars` characters for it. */
  add(row: number, t: number, chars: number): void {
    const w = row * this.words + (t >>> 5);
    this.bits[w] = (this.bits[w] as number) | (1 << (t & 31));
    this.chars[t] = (this.chars[t] as number) + chars;
  }

  /** Removes tenant `t` from `row`, uncounting `chars`; frees its number when it holds nothing. */
  remove(row: number, t: number, chars: number): void {
    const w = row * this.words + (t >>> 5);
    this.bits[w] = (this.bits[w] as number) & ~(1 << (t & 31));
    const left = (this.chars[t] as number) - chars;
    this.chars[t] = left;
    if (left <= 0) this.release(t);
  }

  /** Gives `to` the tenants of `from` (a split: no characters change hands). */
  copy(from: number, to: number): void {
    const n = this.words;
    this.bits.copyWithin(to * n, from * n, from * n + n);
  }

  /** Calls `fn` with each tenant of `row`, in number order. */
  each(row: number, fn: (t: number) => void): void {
    for (let w = 0; w < this.words; w++) {
      let word = this.bits[row * this.words + w] as number;
      while (word !== 0) {
        const bit = 31 - Math.clz32(word & -word);
        word &= word - 1;
        fn(w * 32 + bit);
      }
    }
  }

  /** Pushes onto `into` the id of each tenant of `row` that `accept` takes, in number order. */
  collect(row: number, accept: (id: string) => boolean, into: string[]): void {
    for (let w = 0; w < this.words; w++) {
      let word = this.bits[row * this.words + w] as number;
      while (word !== 0) {
        const id = this.ids[w * 32 + 31 - Math.clz32(word & -word)] as string;
        word &= word - 1;
        if (accept(id)) into.push(id);
      }
    }
  }

  count(row: number): number {
    let n = 0;
    this.each(row, () => n++);
    return n;
  }

  /** Characters held per tenant id (tenants holding none left out). */
  sizes(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [id, t] of this.numbers) out.set(id, this.chars[t] as number);
    return out;
  }

  clear(rows: number): void {
    this.words = 1;
    this.bits = new Uint32Array(rows);
    this.ids.length = 0;
    this.numbers.clear();
    this.free.length = 0;
    this.chars.length = 0;
  }

  /** Forgets tenant `t` (its bits must be clear already). */
  release(t: number): void {
    const id = this.ids[t];
    if (id === undefined) return;
    this.numbers.delete(id);
    this.ids[t] = undefined;
    this.chars[t] = 0;
    this.free.push(t);
  }

  private widen(rows: number, words: number): void {
    const bits = new Uint32Array(rows * words);
    for (let r = 0; r < rows; r++)
      bits.set(this.bits.subarray(r * this.words, (r + 1) * this.words), r * words);
    this.bits = bits;
    this.words = words;
  }
}
