// Prefix-cache model: the prompt is split into fixed-size character blocks whose hashes are chained
// (a block's hash covers every block before it, as in vLLM's automatic prefix caching), kept in an
// LRU of bounded size. Only full blocks are cached, and a block is a hit only if all blocks before
// it hit too.

export interface PrefixLookup {
  /** Full blocks in the prompt. */
  blocks: number;
  /** Leading blocks that were already cached. */
  cached: number;
}

/** Hash of text[start, end) chained on `prev`, as a non-negative integer below 2^53. */
export function chainedBlockHash(text: string, start: number, end: number, prev: number): number {
  // Two independent 32-bit lanes (FNV-1a style and a multiply-rotate lane), each seeded with the
  // previous block's hash, finished with an avalanche step; 21 bits of the second lane on top.
  let a = (0x811c9dc5 ^ (prev >>> 0)) >>> 0;
  let b = (0x6a09e667 ^ Math.floor(prev / 4294967296)) >>> 0;
  for (let i = start; i < end; i++) {
    const ch = text.charCodeAt(i);
    a = Math.imul(a ^ ch, 0x01000193);
    b = Math.imul((b << 5) | (b >>> 27), 0x5bd1e995) ^ ch;
  }
  a = Math.imul(a ^ (a >>> 15), 0x2c1b3c6d);
  a ^= a >>> 12;
  b = Math.imul(b ^ (b >>> 13), 0x297a2d39);
  b ^= b >>> 16;
  return (b & 0x1fffff) * 4294967296 + (a >>> 0);
}

export class PrefixCache {
  private readonly lru = new Map<number, true>();
  queries = 0;
  hits = 0;

  constructor(
    private capacity: number,
    private blockChars: number,
  ) {}

  get size(): number {
    return this.lru.size;
  }

  resize(capacity: number, blockChars: number): void {
    if (blockChars !== this.blockChars) this.lru.clear();
    this.capacity = capacity;
    this.blockChars = blockChars;
    this.evict();
  }

  clear(): void {
    this.lru.clear();
  }

  resetCounters(): void {
    this.queries = 0;
    this.hits = 0;
  }

  /** Looks the prompt up and inserts its blocks (most recent last). */
  lookup(text: string): PrefixLookup {
    const size = this.blockChars;
    const blocks = Math.floor(text.length / size);
    let prev = 0;
    let cached = 0;
    let stillHitting = true;
    for (let i = 0; i < blocks; i++) {
      const h = chainedBlockHash(text, i * size, (i + 1) * size, prev);
      prev = h;
      if (this.capacity <= 0) continue;
      if (stillHitting && this.lru.has(h)) {
        cached++;
        this.lru.delete(h);
      } else {
        stillHitting = false;
      }
      this.lru.set(h, true);
    }
    this.evict();
    this.queries += blocks;
    this.hits += cached;
    return { blocks, cached };
  }

  private evict(): void {
    const over = this.lru.size - Math.max(0, this.capacity);
    if (over <= 0) return;
    let n = 0;
    for (const key of this.lru.keys()) {
      if (n++ >= over) break;
      this.lru.delete(key);
    }
  }
}
