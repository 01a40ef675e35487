/** The prefix tree's nodes, and the read-only walk of a text down them (radix-tree.ts). */
import { labelBytes, NODE_BYTES } from './tree-memory.ts';
import type { TextReader } from './tree-text.ts';

export type Tenants = string | readonly string[];

export interface Node {
  label: string;
  parent: Node | null;
  /** First code unit of the child's label → child. */
  children: Map<number, Node> | null;
  /**
   * The tenants (workers) sent a prompt through this node, in no order: one as a plain string (most
   * nodes: no array to allocate, keep or reach through), several as an array of exactly them.
   */
  tenants: Tenants;
  /** Neighbours in the recency list (null at its ends, and for the root, which is not in it). */
  older: Node | null;
  newer: Node | null;
}

export interface PrefixMatch {
  /** Characters of the text matched by the longest prefix an accepted tenant holds. */
  matched: number;
  /** The accepted tenants holding that prefix (empty when matched is 0). */
  tenants: string[];
}

/** What the tree holds, counted structure by structure (tests and the memory benchmark). */
export interface TreeStats {
  nodes: number;
  /** Nodes in the recency list (always `nodes`). */
  listed: number;
  innerNodes: number;
  tenantEntries: number;
  chars: number;
  bytes: number;
}

/** The nodes a text runs through from the root, and where the text stands after each. */
export interface Walk {
  path: Node[];
  ends: number[];
}

/** Tenants of a node also hold every ancestor, so the deepest node with an accepted tenant wins. */
export function best({ path, ends }: Walk, accept: (tenant: string) => boolean): PrefixMatch {
  for (let i = path.length - 1; i >= 0; i--) {
    const held = (path[i] as Node).tenants;
    const tenants = typeof held === 'string' ? (accept(held) ? [held] : []) : held.filter(accept);
    if (tenants.length > 0) return { matched: ends[i] as number, tenants };
  }
  return { matched: 0, tenants: [] };
}

export function tenantsOf(n: Node): readonly string[] {
  return typeof n.tenants === 'string' ? [n.tenants] : n.tenants;
}

export function tenantCount(n: Node): number {
  return typeof n.tenants === 'string' ? 1 : n.tenants.length;
}

export function holds(n: Node, tenant: string): boolean {
  return typeof n.tenants === 'string' ? n.tenants === tenant : n.tenants.includes(tenant);
}

/** `held` and `tenant` (not in `held`): a new array of exactly them (`push` would reserve 16 slots). */
export function withTenant(held: Tenants, tenant: string): Tenants {
  if (typeof held === 'string') return [held, tenant];
  return held.length === 0 ? tenant : [...held, tenant];
}

/** `held` without `tenant`. */
export function withoutTenant(held: Tenants, tenant: string): Tenants {
  if (typeof held === 'string') return held === tenant ? [] : held;
  const left = held.filter((t) => t !== tenant);
  return left.length === 1 ? (left[0] as string) : left;
}

/** The memory of a node without its tenants and children map. */
export function nodeBytes(n: Node): number {
  return NODE_BYTES + labelBytes(n.label);
}

/** The nodes `text` runs through from `root`; the last one may match only in part. */
export function walkDown(root: Node, text: TextReader): Walk {
  const path: Node[] = [];
  const ends: number[] = [];
  let node = root;
  let pos = 0;
  while (pos < text.length) {
    const child = node.children?.get(text.codeAt(pos));
    if (!child) break;
    const common = text.common(child.label, pos);
    pos += common;
    path.push(child);
    ends.push(pos);
    if (common < child.label.length) break;
    node = child;
  }
  return { path, ends };
}
