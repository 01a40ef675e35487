/**
 * A compact stand-in for a routing text, for a fleet held across a network hop (the Workers'
 * Durable Object): each block of `blockChars` characters becomes two characters of a chained
 * 30-bit FNV-1a hash (each block's hash covers every character before it). Two texts share a
 * prefix of k whole blocks exactly when their compact forms share 2k characters (up to hash
 * collisions, about one in 10^9 per block), so `cache_aware`'s prefix tree matches on the compact
 * form as it would on the text, at block granularity, and an 8 KB prompt travels as 256 characters.
 * The characters lie in U+4000..U+BFFF: no surrogates, so every encoding keeps them intact.
 */
import { type RoutingText, textParts } from '../contracts/routing-text.ts';

export const COMPACT_BLOCK_CHARS = 64;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const BASE = 0x4000;

export function compactRoutingText(text: RoutingText, blockChars = COMPACT_BLOCK_CHARS): string {
  const out: string[] = [];
  const emit = (block: number) =>
    out.push(String.fromCharCode(BASE + (block >>> 17), BASE + ((block >>> 2) & 0x7fff)));
  let h = FNV_OFFSET;
  let filled = 0; // characters of the current block hashed so far
  for (const part of textParts(text)) {
    for (let i = 0; i < part.length; i++) {
      h ^= part.charCodeAt(i);
      h = Math.imul(h, FNV_PRIME) >>> 0;
      if (++filled === blockChars) {
        emit(h);
        filled = 0;
      }
    }
  }
  // A partial last block hashes differently from the same characters followed by more.
  if (filled > 0) emit(Math.imul(h ^ 0xff, FNV_PRIME) >>> 0);
  return out.join('');
}
