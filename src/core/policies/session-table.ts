/**
 * Session → worker assignments of one pool, for the session policies. Two access-ordered maps
 * make expiry O(1) amortised without a timer: `pinned` holds every live session (idle for less
 * than the TTL), `active` the subset that counts as load. Both are kept in last-access order (a
 * request starting or finishing moves a session to the end), so aging only looks at the front.
 * A session with a request in flight is never aged out: it is moved to the end as if seen now.
 */

export interface SessionEntry {
  worker: string;
  /** When a request of the session last started or finished. */
  lastAccess: number;
  /** When the session was last moved by rebalancing (undefined: never moved). */
  movedAt?: number;
}

export interface SessionTableOptions {
  /** Idle time after which a session is forgotten (ms). */
  ttlMs: number;
  /** Idle time after which a session no longer counts as active (ms); capped at the TTL. */
  activeWindowMs: number;
  /** Expired sessions are swept at most this often (ms; default 0: at every `age`). */
  sweepIntervalMs?: number;
  /** Told of every placement this table makes itself (new or moved), not of adopted ones. */
  onAssign?: (id: string, worker: string) => void;
}

function bump(counts: Map<string, number>, worker: string, by: number): void {
  counts.set(worker, Math.max(0, (counts.get(worker) ?? 0) + by));
}

function moveToEnd(map: Map<string, SessionEntry>, id: string, e: SessionEntry): void {
  map.delete(id);
  map.set(id, e);
}

export class SessionTable {
  private readonly pinned = new Map<string, SessionEntry>();
  private readonly active = new Map<string, SessionEntry>();
  private readonly pinnedCounts = new Map<string, number>();
  private readonly activeCounts = new Map<string, number>();
  /** Requests in flight per session id (started and not yet settled). */
  private readonly busy = new Map<string, number>();
  private readonly ttlMs: number;
  private readonly windowMs: number;
  private readonly sweepIntervalMs: number;
  private lastSweep = Number.NEGATIVE_INFINITY;
  private readonly onAssign: ((id: string, worker: string) => void) | undefined;

  constructor(options: SessionTableOptions) {
    this.onAssign = options.onAssign;
    this.ttlMs = options.ttlMs;
    this.windowMs = Math.min(options.activeWindowMs, options.ttlMs);
    this.sweepIntervalMs = options.sweepIntervalMs ?? 0;
  }

  get size(): number {
    return this.pinned.size;
  }

  /**
   * Stops counting idle sessions as active (every call), and forgets expired ones when the last
   * sweep is at least the sweep interval ago (or `force`).
   */
  age(now: number, force = false): void {
    this.ageMap(this.active, now, this.windowMs, (id, e) => {
      this.active.delete(id);
      bump(this.activeCounts, e.worker, -1);
    });
    if (!force && now - this.lastSweep < this.sweepIntervalMs) return;
    this.lastSweep = now;
    this.ageMap(this.pinned, now, this.ttlMs, (id) => this.release(id));
  }

  private ageMap(
    map: Map<string, SessionEntry>,
    now: number,
    limitMs: number,
    drop: (id: string, e: SessionEntry) => void,
  ): void {
    const inFlight: string[] = [];
    for (const [id, e] of map) {
      if (now - e.lastAccess < limitMs) break;
      if (this.inFlight(id) > 0) inFlight.push(id);
      else drop(id, e);
    }
    for (const id of inFlight) this.touch(id, now);
  }

  /** The session's entry; one idle past the TTL (not yet swept) is forgotten now instead. */
  get(id: string, now?: number): SessionEntry | undefined {
    const e = this.pinned.get(id);
    if (e && now !== undefined && now - e.lastAccess >= this.ttlMs && this.inFlight(id) === 0) {
      this.release(id);
      return undefined;
    }
    return e;
  }

  /** Records an access to a known session (it becomes, or stays, active). */
  touch(id: string, now: number): void {
    const e = this.pinned.get(id);
    if (!e) return;
    e.lastAccess = now;
    moveToEnd(this.pinned, id, e);
    if (!this.active.has(id)) bump(this.activeCounts, e.worker, 1);
    moveToEnd(this.active, id, e);
  }

  /** A request of a known session was dispatched. */
  started(id: string): void {
    if (this.pinned.has(id)) this.busy.set(id, this.inFlight(id) + 1);
  }

  /** A request of the session ended at `now` (it counts as an access). */
  finished(id: string, now: number): void {
    const n = this.busy.get(id);
    if (n === undefined) return;
    if (n > 1) this.busy.set(id, n - 1);
    else this.busy.delete(id);
    this.touch(id, now);
  }

  /** Requests of this session in flight. */
  inFlight(id: string): number {
    return this.busy.get(id) ?? 0;
  }

  /** Places a session (new or known) on `worker`, as an access at `now`. */
  assign(id: string, worker: string, now: number, movedAt?: number): void {
    this.adopt(id, worker, now, movedAt);
    this.onAssign?.(id, worker);
  }

  /** Places a session where another replica put it (as `assign`, without telling `onAssign`). */
  adopt(id: string, worker: string, now: number, movedAt?: number): void {
    if (this.pinned.get(id)?.worker === worker) {
      this.touch(id, now);
      return;
    }
    this.release(id);
    const e: SessionEntry = { worker, lastAccess: now };
    if (movedAt !== undefined) e.movedAt = movedAt;
    this.pinned.set(id, e);
    this.active.set(id, e);
    bump(this.pinnedCounts, worker, 1);
    bump(this.activeCounts, worker, 1);
  }

  /** Forgets a session; false if it was not known. Its requests in flight still settle. */
  release(id: string): boolean {
    const e = this.pinned.get(id);
    if (!e) return false;
    this.pinned.delete(id);
    bump(this.pinnedCounts, e.worker, -1);
    if (this.active.delete(id)) bump(this.activeCounts, e.worker, -1);
    return true;
  }

  /** Forgets every session on a worker (it left the pool), and the worker's counters. */
  removeWorker(worker: string): void {
    if (this.pinnedCounts.get(worker)) {
      for (const [id, e] of this.pinned) if (e.worker === worker) this.release(id);
    }
    this.pinnedCounts.delete(worker);
    this.activeCounts.delete(worker);
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
      const entry: SessionEntry = { worker: e.worker, lastAccess: e.lastAccess };
      if (typeof e.movedAt === 'number') entry.movedAt = e.movedAt;
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
    this.busy.clear();
  }

  /** Sessions counted as active load on this worker. */
  activeOn(worker: string): number {
    return this.activeCounts.get(worker) ?? 0;
  }

  /** Live sessions (not expired) pinned to this worker. */
  pinnedOn(worker: string): number {
    return this.pinnedCounts.get(worker) ?? 0;
  }

  /** Per worker that ever held a session in this table (0 once it has none, until removed). */
  activeCountsByWorker(): ReadonlyMap<string, number> {
    return this.activeCounts;
  }

  pinnedCountsByWorker(): ReadonlyMap<string, number> {
    return this.pinnedCounts;
  }
}

/** The Policy hooks every session policy shares: persistence, /finish_session, worker removal. */
export function sessionHooks(
  table: SessionTable,
  onReset: () => void,
  limits: { now: () => number; maxSessions: number },
) {
  return {
    knowsSession: (sessionId: string) => table.get(sessionId, limits.now()) !== undefined,
    adoptSession: (sessionId: string, workerId: string) => {
      const now = limits.now();
      if (table.size >= limits.maxSessions && !table.get(sessionId)) table.age(now, true);
      if (table.size < limits.maxSessions || table.get(sessionId)) table.adopt(sessionId, workerId, now);
    },
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
