/**
 * What the cache_aware prefix tree costs in memory, estimated per node. The tree is bounded by this
 * estimate (--max-tree-bytes), not by its characters: on V8 a node's object, its tenants and its
 * map entry weigh far more than the few characters a distinct prompt adds.
 *
 * The constants are V8's 64-bit layout without pointer compression (Node, Deno), measured with
 * `npm run bench:tree-memory` (heapUsed after a forced GC, before and after inserting 100k prompts
 * of six shapes, then a least-squares fit, rounded up; docs/benchmarks.md has the run): the estimate
 * is within -7 % (CJK text, whose ASCII parts V8 still stores two bytes wide) to +11 % of the
 * measured heap.
 * With pointer compression (workerd) it overestimates, which only makes the tree smaller.
 */

/**
 * One node: the object (6 fields: label, parent, children, tenants, two recency links) and its entry
 * in the parent's children map; with TENANT_BYTES, its tenants (a lone tenant is the worker's id
 * string itself, several an array of them). Most nodes hold one tenant, so the fit splits a
 * one-tenant node's cost between the two constants loosely: their sum is what it measures.
 */
export const NODE_BYTES = 64;
/** One tenant of a node (see NODE_BYTES). */
export const TENANT_BYTES = 90;
/** The children map of an inner node (created with its first child; each child pays its entry). */
export const CHILD_MAP_BYTES = 144;
/** A flat string's header (map word, hash, length). */
const STRING_HEADER = 16;
/** Labels with a character above U+00FF are stored two bytes per character. */
const WIDE = /[\u0100-\uffff]/;

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
