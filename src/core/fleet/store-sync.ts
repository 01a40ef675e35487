/**
 * The background half of a shared fleet (shared-fleet.ts): what this replica writes to the store,
 * batched off the request path, and what it takes from the other replicas.
 *
 * - flush (every `flushMs`): registry entries this replica changed (state-based: a failed write
 *   stays due and is retried, so nothing an operator did is lost in an outage), this replica's
 *   verdicts, session moves, and one batch of events (prefix placements are dropped, not queued,
 *   while the store is down: they would be stale);
 * - sync (every `syncIntervalMs`): this replica's load (expiring after `loadTtlMs`, so a crashed
 *   replica's load disappears), the others' summed load, session expiry pushes, and a full re-read
 *   of registry and verdicts when one is due (start, a registry event, a gap, the store back);
 *   the workers a replica's flags list reach the store's registry as store-seed.ts says.
 * Incoming events apply to the local fleet without being echoed back.
 */

import type { Clock, TimerHandle } from '../contracts/runtime.ts';
import type { SharedEvent, SharedEventBatch, SharedSubscription } from '../contracts/shared-store.ts';
import type { WorkerView } from './registry-view.ts';
import type { ReplicaFleet } from './replica-fleet.ts';
import { type StoreLink, UNAVAILABLE } from './store-link.ts';
import { seedRegistry, sharedWorker } from './store-seed.ts';

export interface StoreSyncOptions {
  clock: Clock;
  sessionTtlMs: number;
  syncIntervalMs?: number;
  flushMs?: number;
  loadTtlMs?: number;
}

/** Events waiting to be published beyond this are dropped (oldest first). */
const MAX_PENDING_EVENTS = 10_000;
const MAX_PENDING_MOVES = 10_000;
/** Batches a starting replica replays (prefix placements and sessions of the other replicas). */
const WARM_UP_BATCHES = 2_000;
/** How long `start` waits for the subscription to find its place in the stream. */
const LISTEN_WAIT_MS = 1_000;

export class StoreSync {
  private readonly dirty = new Set<string>();
  private readonly removed = new Set<string>();
  private readonly verdicts = new Set<string>();
  private readonly moves = new Map<string, { pool: string; sessionId: string; workerId: string }>();
  private readonly touches = new Set<string>();
  private events: SharedEvent[] = [];
  /** The prefix placements in `events` (cleared when they are published). */
  private readonly prefixesQueued = new Set<string>();
  private resyncDue = true;
  private seeded = false;
  private flushing: Promise<void> | undefined;
  private syncing: Promise<void> | undefined;
  private timers: TimerHandle[] = [];
  private stopped = false;
  private subscription: SharedSubscription | undefined;
  private readonly syncMs: number;
  private readonly flushMs: number;
  private readonly loadTtlMs: number;
  private readonly configured: WorkerView[];

  constructor(
    private readonly fleet: ReplicaFleet,
    private readonly link: StoreLink,
    private readonly options: StoreSyncOptions,
  ) {
    this.syncMs = options.syncIntervalMs ?? 250;
    this.flushMs = options.flushMs ?? 50;
    this.loadTtlMs = options.loadTtlMs ?? Math.max(2_000, this.syncMs * 8);
    // Before anything is followed, the fleet holds what the flags list (and discovery found).
    this.configured = fleet.registry.view().filter((v) => v.spec.source === undefined);
  }

  // What this replica observed (called by the shared fleet and the local fleet's hooks).
  registryChanged(id: string): void {
    this.removed.delete(id);
    this.dirty.add(id);
  }
  registryRemoved(id: string): void {
    this.dirty.delete(id);
    this.removed.add(id);
  }
  verdictChanged(id: string): void {
    this.verdicts.add(id);
  }
  touched(sessionId: string): void {
    this.touches.add(sessionId);
  }
  sessionEvent(pool: string, sessionId: string, workerId: string | null): void {
    this.queue({ type: 'session', pool, sessionId, workerId });
  }
  sessionMoved(pool: string, sessionId: string, workerId: string): void {
    if (this.moves.size >= MAX_PENDING_MOVES) return;
    this.moves.set(`${pool}\0${sessionId}`, { pool, sessionId, workerId });
  }
  prefixRecorded(pool: string, text: string, workerId: string): void {
    if (!this.link.connected) return;
    // One event per placement and batch: a prompt repeated within 50 ms adds nothing new.
    const key = `${pool}\0${workerId}\0${text}`;
    if (this.prefixesQueued.has(key)) return;
    this.prefixesQueued.add(key);
    this.queue({ type: 'prefix', pool, text, workerId });
  }

  /**
   * Connects the replica: subscribe (and wait, at most LISTEN_WAIT_MS, until the subscription
   * knows where the stream stands, so nothing published from then on is missed), first sync
   * (seeding the registry), warm-up on the recent events, timers.
   */
  async start(): Promise<void> {
    let listening = (): void => {};
    const positioned = new Promise<void>((resolve) => {
      listening = resolve;
    });
    this.subscription = this.link.store.subscribe({
      onEvents: (batch) => this.apply(batch),
      onGap: () => {
        this.resyncDue = true;
        listening();
      },
      // The link's state is what its calls find (one warning per outage); the subscription's
      // connection comes and goes on its own: back, it has the replica re-read what it missed.
      onConnection: (connected) => {
        if (connected) this.resyncDue = true;
        else listening();
      },
    });
    const bound = this.options.clock.setTimeout(listening, LISTEN_WAIT_MS);
    await positioned;
    this.options.clock.clearTimeout(bound);
    await this.syncNow();
    const recent = await this.link.call('warm_up', () => this.link.store.recentEvents(WARM_UP_BATCHES));
    if (recent !== UNAVAILABLE) for (const batch of recent) this.apply(batch, true);
    this.every(this.flushMs, () => this.flushNow());
    this.every(this.syncMs, () => this.syncNow());
  }

  /** Stops writing, syncing and listening (the store connection itself is the caller's to close). */
  stop(): void {
    this.stopped = true;
    this.subscription?.stop();
    for (const t of this.timers) this.options.clock.clearTimeout(t);
    this.timers = [];
  }

  /** Writes what is due (tests call it instead of waiting for the timer). */
  flushNow(): Promise<void> {
    this.flushing ??= this.flush().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** Load, session expiry and, when due, a full re-read (tests call it instead of waiting). */
  syncNow(): Promise<void> {
    this.syncing ??= this.syncOnce().finally(() => {
      this.syncing = undefined;
    });
    return this.syncing;
  }

  private every(ms: number, run: () => Promise<void>): void {
    const tick = () => {
      if (this.stopped) return;
      void run().finally(() => {
        if (!this.stopped) this.timers = [this.options.clock.setTimeout(tick, ms)];
      });
    };
    this.timers.push(this.options.clock.setTimeout(tick, ms));
  }

  private queue(event: SharedEvent): void {
    this.events.push(event);
    if (this.events.length > MAX_PENDING_EVENTS)
      this.events.splice(0, this.events.length - MAX_PENDING_EVENTS);
  }

  private async flush(): Promise<void> {
    const { store } = this.link;
    let registry = false;
    // The registry's view, built once per flush (not once per changed worker).
    const views =
      this.dirty.size === 0 ? undefined : new Map(this.fleet.registry.view().map((v) => [v.id, v]));
    for (const id of [...this.dirty]) {
      const view = views?.get(id);
      const ok = view
        ? await this.link.call('registry_write', () => store.putWorker(sharedWorker(view)))
        : true;
      if (ok === UNAVAILABLE) return this.dropPrefixes();
      this.dirty.delete(id);
      registry = true;
    }
    for (const id of [...this.removed]) {
      if ((await this.link.call('registry_write', () => store.deleteWorker(id))) === UNAVAILABLE)
        return this.dropPrefixes();
      this.removed.delete(id);
      registry = true;
    }
    if (registry) this.queue({ type: 'registry' });
    for (const id of [...this.verdicts]) {
      const verdict = this.fleet.verdictOf(id, this.options.clock.now());
      this.verdicts.delete(id);
      if (!verdict) continue;
      if ((await this.link.call('verdict_write', () => store.putVerdict(id, verdict))) === UNAVAILABLE) {
        this.verdicts.add(id);
        return this.dropPrefixes();
      }
      this.queue({ type: 'verdict', workerId: id, verdict });
    }
    for (const [key, m] of [...this.moves]) {
      const ttl = this.options.sessionTtlMs;
      const done = await this.link.call('session_move', () =>
        store.moveSession(m.pool, m.sessionId, m.workerId, ttl),
      );
      if (done === UNAVAILABLE) return this.dropPrefixes();
      this.moves.delete(key);
      this.queue({ type: 'session', pool: m.pool, sessionId: m.sessionId, workerId: m.workerId });
    }
    if (this.events.length === 0) return;
    const batch = this.events;
    this.events = [];
    this.prefixesQueued.clear();
    if ((await this.link.call('publish', () => store.publish(batch))) === UNAVAILABLE) {
      this.events = [...batch.filter((e) => e.type !== 'prefix'), ...this.events];
    }
  }

  private dropPrefixes(): void {
    this.events = this.events.filter((e) => e.type !== 'prefix');
    this.prefixesQueued.clear();
  }

  private async syncOnce(): Promise<void> {
    const { store } = this.link;
    const reported = await this.link.call('load_report', () =>
      store.reportLoad(this.fleet.ownLoad(), this.loadTtlMs),
    );
    const remote = await this.link.call('load_read', () => store.readRemoteLoad());
    // Without the store, other replicas' load is unknown: route on this replica's own.
    this.fleet.setRemoteLoad(remote === UNAVAILABLE ? {} : remote);
    if (this.touches.size > 0 && this.link.connected) {
      const ids = [...this.touches];
      this.touches.clear();
      await this.link.call('session_touch', () => store.touchSessions(ids, this.options.sessionTtlMs));
    }
    if (this.resyncDue && this.link.connected) await this.resync();
    if (reported !== UNAVAILABLE && remote !== UNAVAILABLE && !this.resyncDue) this.link.synced();
  }

  /**
   * Re-reads registry and verdicts; the first time, brings the flags' workers into the store's
   * registry (store-seed.ts: added and dropped ones as on a redeploy, admin changes kept).
   */
  private async resync(): Promise<void> {
    const { store } = this.link;
    if (!this.seeded) {
      const seeded = await seedRegistry(this.link, this.configured);
      if (seeded === 'unavailable') return;
      this.seeded = true;
      if (seeded === 'changed') this.queue({ type: 'registry' });
    }
    const entries = await this.link.call('registry_read', () => store.readRegistry());
    if (entries === UNAVAILABLE) return;
    const verdicts = await this.link.call('verdict_read', () => store.readVerdicts());
    if (verdicts === UNAVAILABLE) return;
    this.fleet.followShared(entries, verdicts, this.dirty);
    this.resyncDue = false;
    this.link.synced();
  }

  /** Another replica's events, applied locally (not echoed). `replay`: warm-up, state-like events only. */
  private apply(batch: SharedEventBatch, replay = false): void {
    if (this.stopped || batch.from === this.link.store.replicaId) return;
    for (const e of batch.events) {
      this.link.eventReceived(e.type);
      this.applyEvent(e, replay);
    }
    if (this.resyncDue && !replay) void this.syncNow();
  }

  private applyEvent(e: SharedEvent, replay: boolean): void {
    if (e.type === 'registry') {
      if (!replay) this.resyncDue = true;
    } else if (e.type === 'verdict') {
      if (!replay) this.fleet.adoptVerdict(e.workerId, e.verdict);
    } else if (e.type === 'session') {
      if (e.workerId === null) this.fleet.finishSession(e.sessionId);
      else this.fleet.adoptSession(e.pool, e.sessionId, e.workerId);
    } else {
      this.fleet.recordPrefix(e.pool, e.text, e.workerId);
    }
  }
}
