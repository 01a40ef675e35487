/**
 * Fast, well-mixed, synchronous string hashes for the hashing policies (ring positions, rendezvous
 * weights, session tie-breaks). Not cryptographic: crypto.subtle is async and far too slow here.
 * A murmur3-style body over UTF-16 code units with the murmur3 finaliser, so every input bit
 * reaches every output bit; `hash53` runs two independent lanes for a 53-bit result.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** The murmur3 32-bit finaliser (avalanche). */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function round(h: number, k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, C2);
  h ^= k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** 32-bit hash of a string (unsigned). Two code units per round. */
export function hash32(text: string, seed = 0): number {
  let h = seed | 0;
  const n = text.length;
  let i = 0;
  for (; i + 1 < n; i += 2) h = round(h, text.charCodeAt(i) | (text.charCodeAt(i + 1) << 16));
  if (i < n) h = round(h, text.charCodeAt(i));
  return fmix32(h ^ n);
}

/** 53-bit hash of a string (a safe integer): two independently seeded lanes. */
export function hash53(text: string, seed = 0): number {
  let a = seed ^ 0x9e3779b9;
  let b = seed ^ 0x85ebca77;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const ch = text.charCodeAt(i);
    a = round(a, ch);
    b = Math.imul(b ^ ch, 0x01000193) ^ (b >>> 15);
  }
  const hi = fmix32(b ^ n ^ a) & 0x1fffff;
  return hi * 4294967296 + fmix32(a ^ n);
}

/** Combines a precomputed key hash with a string (rendezvous: one key, many worker ids). */
export function hashWith(keyHash: number, text: string): number {
  return hash53(text, fmix32(keyHash >>> 0) ^ Math.floor(keyHash / 4294967296));
}
