/**
 * An isolate's map of the fleet's objects (fleet-client.ts): which models have a pool object, as
 * of the newest registry version a route answer reported, and which object granted each lease the
 * core holds. The core sees the isolate's own lease numbers; a settle goes to the object that
 * granted the lease, once. A lease the core never settled (its request vanished) is forgotten
 * after `ttlMs`; the object reclaims it on its side after the request timeout anyway.
 */
import type { RegistryNews } from './rpc.ts';

interface Granted<T> {
  target: T;
  lease: number;
  expiresAt: number;
}

export class ShardMap<T> {
  /** The registry version the pools were learnt from (0: none yet). */
  version = 0;
  private pools: ReadonlySet<string> = new Set();
  private readonly leases = new Map<number, Granted<T>>();
  private nextLease = 1;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = () => Date.now(),
  ) {}

  learn(news: RegistryNews | undefined): void {
    if (news === undefined || news.version <= this.version) return;
    this.version = news.version;
    this.pools = new Set(news.models);
  }

  hasPool(model: string): boolean {
    return this.pools.has(model);
  }

  /** The isolate's number for a lease `target` granted. */
  grant(target: T, lease: number): number {
    const now = this.now();
    this.forgetExpired(now);
    const id = this.nextLease++;
    this.leases.set(id, { target, lease, expiresAt: now + this.ttlMs });
    return id;
  }

  /** The object and number of a lease, once; undefined when it was settled (or forgotten). */
  take(id: number): { target: T; lease: number } | undefined {
    const granted = this.leases.get(id);
    if (granted) this.leases.delete(id);
    return granted;
  }

  get held(): number {
    return this.leases.size;
  }

  /** Leases are kept in the order granted: the expired ones are at the front. */
  private forgetExpired(now: number): void {
    for (const [id, granted] of this.leases) {
      if (granted.expiresAt > now) return;
      this.leases.delete(id);
    }
  }
}
