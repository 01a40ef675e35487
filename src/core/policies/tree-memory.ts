/**
 * What the cache_aware prefix tree costs in memory, estimated per node. The tree is bounded by this
 * estimate (--max-tree-bytes), not by its characters: a node's row, edge and label weigh more than
 * the few characters a distinct prompt adds.
 *
 * A node is a row of five int32 (tree-rows.ts) and its tenants' bit-set words (tree-tenants.ts;
 * both arrays grow by half when full), a slot in the labels array (8 bytes, V8 grows
 * it by half too), an edge in the children hash table (tree-children.ts: one int32 slot, at most
 * half the slots used, doubled when more are), and its label, a flat string. A node is charged the
 * most spare room the buffers can have (24 × 1.5 + 8 × 1.5 + 4 × 4 = 64 bytes with one tenant word), so the
 * estimate is an upper bound of what the tree holds: `npm run bench:tree-memory` (heap and array
 * buffers after a forced GC, before and after inserting 100k prompts of six shapes) measures
 * 35-59 bytes a node; docs/benchmarks.md has the run. With pointer compression (some V8 builds) the labels
 * array is half that, which only makes the tree smaller.
 */

/** One node's row, labels-array slot and edge, at the buffers' largest spare room. */
export const NODE_BYTES = 58;
/** One 32-bit word of a node's tenant bit set (one per 32 tenants a pool has seen), spare room included. */
export const TENANT_WORD_BYTES = 6;
/** A flat string's header (map word, hash, length). */
const STRING_HEADER = 16;
/** Labels with a character above U+00FF are stored two bytes per character. */
const WIDE = /[\u0100-\uffff]/;

/** The memory of a node, its label aside, when rows hold `words` tenant words. */
export function nodeBytes(words: number): number {
  return NODE_BYTES + TENANT_WORD_BYTES * words;
}

/**
 * The memory of a label as `ownCopy` leaves it (or a leaf label joined from several parts of a
 * text): a flat string of its own.
 */
export function labelBytes(label: string): number {
  const width = WIDE.test(label) ? 2 : 1;
  return STRING_HEADER + roundUp8(label.length * width);
}

function roundUp8(n: number): number {
  return Math.ceil(n / 8) * 8;
}
