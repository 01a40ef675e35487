// Request logs (bounded rings) with event-driven waiters.
import type { SimLogEntry, SimLogKind } from './types.ts';

export const nowMs = (): number => performance.timeOrigin + performance.now();

class Ring {
  private buf: SimLogEntry[] = [];
  private start = 0;

  /** Appends, dropping the oldest entry once `cap` (> 0) entries are held. */
  push(e: SimLogEntry, cap: number): void {
    if (this.buf.length > cap || (this.start !== 0 && this.buf.length < cap)) {
      // The capacity changed: lay the ring out flat again.
      this.buf = this.list().slice(-cap);
      this.start = 0;
    }
    if (this.buf.length < cap) {
      this.buf.push(e);
      return;
    }
    this.buf[this.start] = e;
    this.start = (this.start + 1) % cap;
  }

  list(): SimLogEntry[] {
    return this.start === 0
      ? this.buf.slice()
      : this.buf.slice(this.start).concat(this.buf.slice(0, this.start));
  }

  clear(): void {
    this.buf = [];
    this.start = 0;
  }
}

interface Waiter {
  kind: SimLogKind;
  predicate: (e: SimLogEntry) => boolean;
  resolve: (e: SimLogEntry) => void;
  reject: (err: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class RequestLog {
  private readonly rings: Record<SimLogKind, Ring> = { inference: new Ring(), probe: new Ring() };
  private readonly waiters = new Set<Waiter>();
  private seq = 0;

  constructor(private size: () => number) {}

  get enabled(): boolean {
    return this.size() > 0;
  }

  list(kind: SimLogKind): SimLogEntry[] {
    return this.rings[kind].list();
  }

  /** Creates and stores an entry (null when logging is off). */
  open(init: Pick<SimLogEntry, 'kind' | 'tMs' | 'method' | 'path' | 'headers' | 'body'>): SimLogEntry | null {
    const cap = this.size();
    if (cap <= 0) return null;
    const entry: SimLogEntry = {
      seq: ++this.seq,
      ...init,
      status: null,
      completed: false,
      aborted: false,
      tEndMs: null,
      tokensSent: 0,
      injected: null,
      cachedBlocks: null,
      promptBlocks: null,
    };
    this.rings[init.kind].push(entry, cap);
    this.notify(entry);
    return entry;
  }

  /** Applies a change to an entry and wakes matching waiters. */
  update(entry: SimLogEntry | null, patch: Partial<SimLogEntry>): void {
    if (!entry) return;
    Object.assign(entry, patch);
    this.notify(entry);
  }

  clear(): void {
    this.rings.inference.clear();
    this.rings.probe.clear();
  }

  waitFor(predicate: (e: SimLogEntry) => boolean, timeoutMs: number, kind: SimLogKind): Promise<SimLogEntry> {
    for (const e of this.rings[kind].list()) if (predicate(e)) return Promise.resolve(e);
    return new Promise<SimLogEntry>((resolve, reject) => {
      const waiter: Waiter = {
        kind,
        predicate,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          const recent = this.rings[kind]
            .list()
            .slice(-5)
            .map(
              (e) =>
                `#${e.seq} ${e.method} ${e.path} status=${e.status} completed=${e.completed} aborted=${e.aborted}`,
            );
          reject(
            new Error(
              `waitForLog: no matching ${kind} entry within ${timeoutMs} ms; last: ${recent.join('; ') || 'none'}`,
            ),
          );
        }, timeoutMs),
      };
      this.waiters.add(waiter);
    });
  }

  private notify(entry: SimLogEntry): void {
    if (this.waiters.size === 0) return;
    for (const w of this.waiters) {
      if (w.kind !== entry.kind) continue;
      let match = false;
      try {
        match = w.predicate(entry);
      } catch (err) {
        this.waiters.delete(w);
        clearTimeout(w.timer);
        w.reject(err instanceof Error ? err : new Error(String(err)));
        continue;
      }
      if (match) {
        this.waiters.delete(w);
        clearTimeout(w.timer);
        w.resolve(entry);
      }
    }
  }
}
