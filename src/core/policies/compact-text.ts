/**
 * A compact stand-in for a routing text, for a fleet held across a network hop (the Workers'
 * Durable Object): each block of `blockChars` characters becomes two characters of a chained
 * 30-bit FNV-1a hash (each block's hash covers every character before it). Two texts share a
 * prefix of k whole blocks exactly when their compact forms share 2k characters (up to hash
 * collisions, about one in 10^9 per block), so `cache_aware`'s prefix tree matches on the compact
 * form as it would on the text, at block granularity, and an 8 KB prompt travels as 256 characters.
 * The characters lie in U+4000..U+BFFF: no surrogates, so every encoding keeps them intact.
 */

export const COMPACT_BLOCK_CHARS = 64;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const BASE = 0x4000;

export function compactRoutingText(text: string, blockChars = COMPACT_BLOCK_CHARS): string {
  const out: string[] = [];
  let h = FNV_OFFSET;
  for (let start = 0; start < text.length; start += blockChars) {
    const end = Math.min(text.length, start + blockChars);
    for (let i = start; i < end; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, FNV_PRIME) >>> 0;
    }
    // A partial last block hashes differently from the same characters followed by more.
    const block = end - start === blockChars ? h : Math.imul(h ^ 0xff, FNV_PRIME) >>> 0;
    out.push(String.fromCharCode(BASE + (block >>> 17), BASE + ((block >>> 2) & 0x7fff)));
  }
  return out.join('');
}
