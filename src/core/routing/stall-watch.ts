/**
 * Stuck engines, detected by lack of progress. Every attempt is tracked from its send until its
 * first response byte (the status line and, for a stream, its first chunk); every first byte and
 * every relayed chunk is progress for its worker.
 *
 * - Suspect: a worker with attempts waiting for their first byte that has made no progress for
 *   longer than the stall threshold of the oldest waiting attempt's class. New requests avoid a
 *   suspect (softly: the fleet still routes to it when nothing else is available).
 * - Stalled: a suspect while another worker made progress within that threshold (the fleet is
 *   alive, this engine is not). Its waiting attempts are abandoned: nothing reached their clients,
 *   so the attempt loop retries them elsewhere and reports the stall to the fleet.
 * - Canary: a suspect with two or more waiting attempts while no other worker has shown progress
 *   (every client is stuck on it, so nothing else gets traffic): its oldest attempt is moved to
 *   another worker, at most once per threshold, which tells whether the others are alive. A canary
 *   is no evidence against the engine by itself. With no other worker to move it to (a lone
 *   engine, the others down or draining), nothing is moved: the attempts wait, held by their limits.
 * - Per-attempt limits: an attempt whose first byte takes longer than its class's first-byte
 *   timeout is abandoned the same way.
 * Threshold = max(the class's minimum, factor × the recent p95 time to first byte of that class).
 * One timer on the injected clock runs the checks while any attempt is waiting.
 */
import type { RouterConfig } from '../config/schema.ts';
import { type Clock, type TimerHandle, watchdog } from '../contracts/runtime.ts';
import { LatencyWindow } from './latency-window.ts';
import { SlotList } from './slot-list.ts';

export interface StallSettings {
  disabled: boolean;
  /** Minimum no-progress time before a worker is suspect, per class (ms). */
  streamMinMs: number;
  minMs: number;
  factor: number;
  /** Per-attempt first-byte limits (ms, 0 = off). */
  streamFirstByteTimeoutMs: number;
  firstByteTimeoutMs: number;
}

/** The watch's settings from the config (`stall` and the per-attempt first-byte limits). */
export function stallSettings(config: RouterConfig): StallSettings {
  const { stall, attempt } = config;
  return {
    disabled: stall.disabled,
    streamMinMs: stall.streamMinSecs * 1000,
    minMs: stall.minSecs * 1000,
    factor: stall.factor,
    streamFirstByteTimeoutMs: attempt.streamFirstByteTimeoutSecs * 1000,
    firstByteTimeoutMs: attempt.firstByteTimeoutSecs * 1000,
  };
}

/** Why an attempt was abandoned by the watch. */
export type AbandonReason = 'stalled' | 'first_byte_timeout' | 'canary';

/** How often the checks run while attempts wait. */
const NONE: readonly string[] = [];

export const STALL_CHECK_MS = 1000;

export class AttemptTracker {
  /** Called when the watch abandons the attempt: aborts its engine request. */
  onAbandon: (() => void) | undefined;
  abandoned: AbandonReason | undefined;
  firstByteAt: number | undefined;
  /** Its place in its worker's list of waiting attempts. */
  slot = -1;

  constructor(
    readonly workerId: string,
    readonly stream: boolean,
    readonly startedAt: number,
  ) {}

  get waiting(): boolean {
    return this.firstByteAt === undefined && this.abandoned === undefined;
  }
}

interface WorkerProgress {
  /** Last real progress (a first byte or a chunk); -Infinity before any. */
  lastProgressAt: number;
  /** Silence is counted from here: the later of the last progress and the moment it got busy. */
  silentSince: number;
  /** When an attempt was last moved off this worker to test another one (no verdict yet). */
  canaryAt: number;
  waiting: SlotList<AttemptTracker>;
}

export class StallWatch {
  private readonly workers = new Map<string, WorkerProgress>();
  private readonly firstBytes = { stream: new LatencyWindow(), plain: new LatencyWindow() };
  private timer: TimerHandle | undefined;
  private waitingCount = 0;

  constructor(
    private readonly clock: Clock,
    private readonly settings: StallSettings,
    /**
     * Whether the fleet has another worker that could take an attempt moved off `workerId` (a
     * canary); true when it cannot tell (a remote fleet). On a lone engine a move would only abort
     * its work and send it straight back.
     */
    private readonly hasOther: (workerId: string) => boolean = () => true,
  ) {}

  /** Starts tracking an attempt to `workerId` (sent now). */
  begin(workerId: string, stream: boolean): AttemptTracker {
    const now = this.clock.monotonic();
    const tracker = new AttemptTracker(workerId, stream, now);
    let w = this.workers.get(workerId);
    if (!w) {
      w = {
        lastProgressAt: Number.NEGATIVE_INFINITY,
        silentSince: now,
        canaryAt: Number.NEGATIVE_INFINITY,
        waiting: new SlotList(),
      };
      this.workers.set(workerId, w);
    }
    if (w.waiting.size === 0) w.silentSince = Math.max(w.lastProgressAt, now);
    w.waiting.add(tracker);
    this.waitingCount++;
    this.arm();
    return tracker;
  }

  /** The attempt's first byte arrived; returns its time to first byte (ms). */
  firstByte(tracker: AttemptTracker): number {
    const now = this.clock.monotonic();
    const elapsed = now - tracker.startedAt;
    if (tracker.firstByteAt === undefined) {
      tracker.firstByteAt = now;
      (tracker.stream ? this.firstBytes.stream : this.firstBytes.plain).add(elapsed);
    }
    this.stopWaiting(tracker);
    this.progress(tracker.workerId, now);
    return elapsed;
  }

  /** The attempt ended without a first byte (failure, retryable status, client gone). */
  end(tracker: AttemptTracker): void {
    this.stopWaiting(tracker);
  }

  /** A chunk of a started answer arrived from `workerId`. */
  progress(workerId: string, now = this.clock.monotonic()): void {
    const w = this.workers.get(workerId);
    if (!w) return;
    w.lastProgressAt = now;
    w.silentSince = now;
  }

  /** Workers new requests should avoid right now (suspects, as of the latest check: no work per request). */
  suspects(): readonly string[] {
    return this.suspected;
  }

  private suspected: readonly string[] = [];

  private findSuspects(now: number): void {
    const out: string[] = [];
    for (const [id, w] of this.workers) if (this.silentTooLong(w, now)) out.push(id);
    this.suspected = out.length === 0 ? NONE : out;
  }

  /** Runs the checks now (the timer does this every second while attempts wait). */
  check(): void {
    const now = this.clock.monotonic();
    this.abandonOverdue(now);
    if (this.settings.disabled) return;
    this.findSuspects(now);
    for (const [id, w] of this.workers) {
      if (!this.silentTooLong(w, now)) continue;
      const first = oldest(w.waiting) as AttemptTracker;
      const window = this.windowFor(w);
      if (this.othersProgressed(id, now - window)) {
        for (const t of w.waiting.members()) this.abandon(t, 'stalled');
      } else if (w.waiting.size >= 2 && now - w.canaryAt > window && this.hasOther(id)) {
        // Nobody else has shown progress: move one attempt elsewhere to find out. Requests pile up
        // on a hung engine; a lone long request is not taken for a hang.
        w.canaryAt = now;
        this.abandon(first, 'canary');
      }
    }
  }

  /** The smallest threshold among the classes of the worker's waiting attempts. */
  private windowFor(w: WorkerProgress): number {
    let stream = false;
    let plain = false;
    for (const t of w.waiting.members()) {
      if (t.stream) stream = true;
      else plain = true;
      if (stream && plain) break;
    }
    return Math.min(stream ? this.threshold(true) : Infinity, plain ? this.threshold(false) : Infinity);
  }

  private silentTooLong(w: WorkerProgress, now: number): boolean {
    if (w.waiting.size === 0) return false;
    return now - w.silentSince > this.windowFor(w);
  }

  private othersProgressed(id: string, since: number): boolean {
    for (const [other, w] of this.workers) if (other !== id && w.lastProgressAt >= since) return true;
    return false;
  }

  private threshold(stream: boolean): number {
    const { streamMinMs, minMs, factor } = this.settings;
    const p95 = (stream ? this.firstBytes.stream : this.firstBytes.plain).p95();
    return Math.max(stream ? streamMinMs : minMs, factor * p95);
  }

  private abandonOverdue(now: number): void {
    const { streamFirstByteTimeoutMs: streamLimit, firstByteTimeoutMs: limit } = this.settings;
    if (streamLimit <= 0 && limit <= 0) return;
    for (const w of this.workers.values()) {
      for (const t of w.waiting.members()) {
        const max = t.stream ? streamLimit : limit;
        if (max > 0 && now - t.startedAt >= max) this.abandon(t, 'first_byte_timeout');
      }
    }
  }

  private abandon(tracker: AttemptTracker, reason: AbandonReason): void {
    tracker.abandoned = reason;
    this.stopWaiting(tracker);
    tracker.onAbandon?.();
  }

  private stopWaiting(tracker: AttemptTracker): void {
    const w = this.workers.get(tracker.workerId);
    if (!w?.waiting.delete(tracker)) return;
    this.waitingCount--;
    if (w.waiting.size === 0 && this.suspected.includes(tracker.workerId)) {
      this.suspected = this.suspected.filter((id) => id !== tracker.workerId);
    }
    if (this.waitingCount === 0) this.disarm();
  }

  private arm(): void {
    if (this.timer !== undefined) return;
    const tick = watchdog(() => {
      this.timer = undefined;
      this.check();
      if (this.waitingCount > 0) this.arm();
    });
    this.timer = this.clock.setTimeout(tick, STALL_CHECK_MS);
  }

  private disarm(): void {
    if (this.timer === undefined) return;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}

function oldest(waiting: SlotList<AttemptTracker>): AttemptTracker | undefined {
  return waiting.min((t) => t.startedAt);
}
