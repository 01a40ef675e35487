/**
 * consistent_hash (alias consistent_hashing): a ring of 160 virtual nodes per worker. The key is
 * the request's routing key (session, user, tenant, ... headers, then body fields), else the
 * routing text. The ring holds every worker of the pool seen so far, eligible or not, so when the
 * owner is unhealthy, draining or excluded the walk continues clockwise to the next eligible
 * worker: the key moves to its ring successor and comes back when the owner recovers, and only
 * about 1/n of the keys move when a worker joins. Requests with neither key nor text go to the
 * least-loaded worker.
 */
import type { RouteInput } from '../contracts/fleet-api.ts';
import { joinText } from '../contracts/routing-text.ts';
import { hash32 } from './hash.ts';
import type { Policy, PolicyWorker } from './policy.ts';
import { TieBreaker } from './tie-break.ts';

export const VIRTUAL_NODES = 160;

/** The hashing key of a request: its routing key, else its routing text. */
export function hashKeyOf(input: RouteInput): string | undefined {
  if (input.routingKey) return input.routingKey;
  const text = input.text === undefined ? '' : joinText(input.text);
  return text === '' ? undefined : text;
}

export class HashRing {
  private readonly members = new Set<string>();
  private positions = new Uint32Array(0);
  private owners: string[] = [];
  private dirty = false;

  get size(): number {
    return this.members.size;
  }

  has(id: string): boolean {
    return this.members.has(id);
  }

  add(id: string): void {
    if (this.members.has(id)) return;
    this.members.add(id);
    this.dirty = true;
  }

  remove(id: string): void {
    if (this.members.delete(id)) this.dirty = true;
  }

  clear(): void {
    this.members.clear();
    this.dirty = true;
  }

  /** The first ring owner clockwise from `key` that `accept` takes, or undefined. */
  lookup(key: string, accept: (id: string) => boolean): string | undefined {
    if (this.dirty) this.rebuild();
    const n = this.positions.length;
    if (n === 0) return undefined;
    const h = hash32(key);
    // First virtual node at or after h (binary search), wrapping to 0.
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.positions[mid] as number) < h) lo = mid + 1;
      else hi = mid;
    }
    let last: string | undefined;
    for (let k = 0; k < n; k++) {
      const owner = this.owners[(lo + k) % n] as string;
      if (owner === last) continue;
      if (accept(owner)) return owner;
      last = owner;
    }
    return undefined;
  }

  private rebuild(): void {
    const entries: { pos: number; owner: string }[] = [];
    for (const id of this.members) {
      for (let v = 0; v < VIRTUAL_NODES; v++) entries.push({ pos: hash32(`${id}#${v}`), owner: id });
    }
    // Ties on a position (vanishingly rare) are ordered by id, so every instance builds the same ring.
    entries.sort((a, b) => a.pos - b.pos || (a.owner < b.owner ? -1 : a.owner > b.owner ? 1 : 0));
    this.positions = Uint32Array.from(entries, (e) => e.pos);
    this.owners = entries.map((e) => e.owner);
    this.dirty = false;
  }
}

export function createConsistentHash(): Policy {
  const ring = new HashRing();
  const ties = new TieBreaker();
  return {
    name: 'consistent_hash',
    select(candidates: readonly PolicyWorker[], input: RouteInput) {
      if (candidates.length === 1) {
        ring.add((candidates[0] as PolicyWorker).id);
        return candidates[0];
      }
      for (const w of candidates) ring.add(w.id);
      const key = hashKeyOf(input);
      if (key === undefined) return ties.pick(candidates);
      const byId = new Map<string, PolicyWorker>();
      for (const w of candidates) byId.set(w.id, w);
      const owner = ring.lookup(key, (id) => byId.has(id));
      return owner === undefined ? ties.pick(candidates) : byId.get(owner);
    },
    onWorkerRemoved(workerId: string) {
      ring.remove(workerId);
    },
    reset() {
      ring.clear();
      ties.reset();
    },
  };
}
