/**
 * Session → worker assignments of one pool, for the session policies. Two access-ordered maps
 * make expiry O(1) amortised without a timer: `pinned` holds every live session (idle for less
 * than the TTL), `active` the subset seen within the active window. Both are kept in last-access
 * order (an access moves a session to the end), so aging only ever looks at the front.
 */

export interface SessionEntry {
  worker: string;
  lastAccess: number;
  /** When the session was last placed on a worker (new, failed over or rebalanced). */
  assignedAt: number;
}

export interface SessionTableOptions {
  /** Idle time after which a session is forgotten (ms). */
  ttlMs: number;
  /** Idle time after which a session no longer counts as active (ms); capped at the TTL. */
  activeWindowMs: number;
}

function bump(counts: Map<string, number>, worker: string, by: number): void {
  const n = (counts.get(worker) ?? 0) + by;
  if (n > 0) counts.set(worker, n);
  else counts.delete(worker);
}

export class SessionTable {
  private readonly pinned = new Map<string, SessionEntry>();
  private readonly active = new Map<string, SessionEntry>();
  private readonly pinnedCounts = new Map<string, number>();
  private readonly activeCounts = new Map<string, number>();
  private readonly ttlMs: number;
  private readonly windowMs: number;

  constructor(options: SessionTableOptions) {
    this.ttlMs = options.ttlMs;
    this.windowMs = Math.min(options.activeWindowMs, options.ttlMs);
  }

  get size(): number {
    return this.pinned.size;
  }

  /** Forgets expired sessions and stops counting idle ones as active. */
  age(now: number): void {
    for (const [id, e] of this.active) {
      if (now - e.lastAccess < this.windowMs) break;
      this.active.delete(id);
      bump(this.activeCounts, e.worker, -1);
    }
    for (const [id, e] of this.pinned) {
      if (now - e.lastAccess < this.ttlMs) break;
      this.pinned.delete(id);
      bump(this.pinnedCounts, e.worker, -1);
    }
  }

  get(id: string): SessionEntry | undefined {
    return this.pinned.get(id);
  }

  /** Records an access to a known session (it becomes, or stays, active). */
  touch(id: string, now: number): void {
    const e = this.pinned.get(id);
    if (!e) return;
    e.lastAccess = now;
    this.pinned.delete(id);
    this.pinned.set(id, e);
    if (this.active.delete(id)) this.active.set(id, e);
    else {
      this.active.set(id, e);
      bump(this.activeCounts, e.worker, 1);
    }
  }

  /** Places a session (new or known) on `worker`, as an access at `now`. */
  assign(id: string, worker: string, now: number): void {
    this.release(id);
    const e: SessionEntry = { worker, lastAccess: now, assignedAt: now };
    this.pinned.set(id, e);
    this.active.set(id, e);
    bump(this.pinnedCounts, worker, 1);
    bump(this.activeCounts, worker, 1);
  }

  /** Forgets a session; false if it was not known. */
  release(id: string): boolean {
    const e = this.pinned.get(id);
    if (!e) return false;
    this.pinned.delete(id);
    bump(this.pinnedCounts, e.worker, -1);
    if (this.active.delete(id)) bump(this.activeCounts, e.worker, -1);
    return true;
  }

  /** Forgets every session on a worker (it left the pool). */
  removeWorker(worker: string): void {
    if (!this.pinnedCounts.has(worker)) return;
    for (const [id, e] of this.pinned) if (e.worker === worker) this.release(id);
  }

  /** Every live session, least recently used first (plain JSON, for a restart). */
  export(): [string, SessionEntry][] {
    return [...this.pinned].map(([id, e]) => [id, { ...e }]);
  }

  /** Loads what `export` returned; aging at the next use drops what expired meanwhile. */
  import(entries: unknown): void {
    this.clear();
    if (!Array.isArray(entries)) return;
    for (const item of entries) {
      if (!Array.isArray(item)) continue;
      const [id, e] = item as [unknown, Partial<SessionEntry> | undefined];
      if (typeof id !== 'string' || typeof e?.worker !== 'string' || typeof e.lastAccess !== 'number')
        continue;
      const entry: SessionEntry = {
        worker: e.worker,
        lastAccess: e.lastAccess,
        assignedAt: e.assignedAt ?? e.lastAccess,
      };
      this.pinned.set(id, entry);
      this.active.set(id, entry);
      bump(this.pinnedCounts, entry.worker, 1);
      bump(this.activeCounts, entry.worker, 1);
    }
  }

  clear(): void {
    this.pinned.clear();
    this.active.clear();
    this.pinnedCounts.clear();
    this.activeCounts.clear();
  }

  /** Sessions seen within the active window, on this worker. */
  activeOn(worker: string): number {
    return this.activeCounts.get(worker) ?? 0;
  }

  /** Live sessions (not expired) pinned to this worker. */
  pinnedOn(worker: string): number {
    return this.pinnedCounts.get(worker) ?? 0;
  }

  activeCountsByWorker(): ReadonlyMap<string, number> {
    return this.activeCounts;
  }

  pinnedCountsByWorker(): ReadonlyMap<string, number> {
    return this.pinnedCounts;
  }
}

/** The Policy hooks every session policy shares: persistence, /finish_session, worker removal. */
export function sessionHooks(table: SessionTable, onReset: () => void) {
  return {
    snapshot: () => ({ sessions: table.export() }),
    restore: (state: unknown) => table.import((state as { sessions?: unknown } | undefined)?.sessions),
    finishSession: (sessionId: string) => void table.release(sessionId),
    onWorkerRemoved: (workerId: string) => table.removeWorker(workerId),
    reset: () => {
      table.clear();
      onReset();
    },
  };
}

/** UTF-8 length of a string without allocating (the session-id cap is in bytes). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}
