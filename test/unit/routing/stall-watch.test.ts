/** The stall watch on the fake clock: suspects, stalls, canaries and first-byte limits. */
import { describe, expect, it } from 'vitest';
import type { FleetApi, WorkerInfo } from '../../../src/core/contracts/fleet-api.ts';
import { otherWorkerCheck } from '../../../src/core/routing/context.ts';
import { type StallSettings, StallWatch } from '../../../src/core/routing/stall-watch.ts';
import { FakeClock } from '../../support/fake-clock.ts';

const settings = (over: Partial<StallSettings> = {}): StallSettings => ({
  disabled: false,
  streamMinMs: 5000,
  minMs: 30_000,
  factor: 4,
  streamFirstByteTimeoutMs: 0,
  firstByteTimeoutMs: 0,
  ...over,
});

describe('StallWatch', () => {
  it('a silent engine with streams waiting becomes a suspect after 5 s, then stalled once another engine answers', () => {
    const clock = new FakeClock();
    const watch = new StallWatch(clock, settings());
    const a1 = watch.begin('a', true);
    let aborted = false;
    a1.onAbandon = () => {
      aborted = true;
    };
    clock.advance(4000);
    expect(watch.suspects()).toEqual([]);
    clock.advance(2000); // the next check (once a second) finds it
    expect(watch.suspects()).toEqual(['a']);
    expect(a1.abandoned).toBeUndefined(); // one waiting attempt and nobody else: no verdict yet
    const a2 = watch.begin('a', false);
    const b = watch.begin('b', true);
    watch.firstByte(b); // b is alive
    watch.check();
    expect(a1.abandoned).toBe('stalled');
    expect(a2.abandoned).toBe('stalled'); // every waiting attempt of a stalled engine
    expect(aborted).toBe(true);
    expect(watch.suspects()).toEqual([]);
  });

  it('with nobody else making progress, moves one attempt (a canary) per threshold, only when two or more wait', () => {
    const clock = new FakeClock();
    const watch = new StallWatch(clock, settings());
    const lone = watch.begin('a', true);
    clock.advance(10_000);
    expect(lone.abandoned).toBeUndefined(); // a single long request is not a hang
    const second = watch.begin('a', true);
    clock.advance(1000); // the periodic check runs
    expect(lone.abandoned).toBe('canary');
    expect(second.abandoned).toBeUndefined();
    clock.advance(1000);
    expect(second.abandoned).toBeUndefined(); // at most one canary per threshold
  });

  it('moves nothing when the fleet has no other worker to take the attempt (a lone engine)', () => {
    const clock = new FakeClock();
    const others = new Map([['a', false]]);
    const watch = new StallWatch(clock, settings(), (id) => others.get(id) ?? true);
    const first = watch.begin('a', true);
    const second = watch.begin('a', true);
    clock.advance(60_000);
    expect(watch.suspects()).toEqual(['a']); // still avoided by new requests, should another engine come
    expect(first.abandoned).toBeUndefined();
    expect(second.abandoned).toBeUndefined();
    others.set('a', true); // a second engine joins
    clock.advance(1000);
    expect(first.abandoned).toBe('canary');
  });

  it('the canary is the oldest waiting attempt, even when a newer one took a freed slot', () => {
    const clock = new FakeClock();
    const watch = new StallWatch(clock, settings());
    const quick = watch.begin('a', true);
    clock.advance(100);
    const older = watch.begin('a', true);
    watch.firstByte(quick); // answered: its place is free
    clock.advance(100);
    const newer = watch.begin('a', true); // takes that place
    clock.advance(6000); // silent for longer than the stream threshold; the check runs
    expect(older.abandoned).toBe('canary');
    expect(newer.abandoned).toBeUndefined();
  });

  it('progress on a stream keeps its engine clear', () => {
    const clock = new FakeClock();
    const watch = new StallWatch(clock, settings());
    const waiting = watch.begin('a', true);
    for (let i = 0; i < 10; i++) {
      clock.advance(1000);
      watch.progress('a'); // another answer of the same engine streams on
    }
    expect(watch.suspects()).toEqual([]);
    expect(waiting.abandoned).toBeUndefined();
    watch.end(waiting);
  });

  it('non-streaming attempts wait 30 s (or factor × the p95 time to first byte) before suspicion', () => {
    const clock = new FakeClock();
    const watch = new StallWatch(clock, settings());
    for (let i = 0; i < 20; i++) {
      const t = watch.begin('b', false);
      clock.advance(10_000); // answers take 10 s here: the threshold becomes 4 × 10 s
      watch.firstByte(t);
    }
    watch.begin('a', false);
    clock.advance(35_000);
    expect(watch.suspects()).toEqual([]);
    clock.advance(7000);
    expect(watch.suspects()).toEqual(['a']);
  });

  it('abandons an attempt past its first-byte limit; disabled detection still honours the limit', () => {
    const clock = new FakeClock();
    const watch = new StallWatch(clock, settings({ disabled: true, streamFirstByteTimeoutMs: 3000 }));
    const t = watch.begin('a', true);
    clock.advance(2000);
    expect(t.abandoned).toBeUndefined();
    clock.advance(1000);
    expect(t.abandoned).toBe('first_byte_timeout');
    expect(clock.pendingTimers).toBe(0); // the check timer stops when nothing waits
  });

  describe('whether another worker could take a moved attempt (the fleet is asked)', () => {
    const worker = (id: string, over: Partial<WorkerInfo> = {}): WorkerInfo => ({
      id,
      url: `http://${id}`,
      role: 'regular',
      models: null,
      healthy: true,
      draining: false,
      circuit: 'closed',
      load: 0,
      processed: 0,
      ...over,
    });
    const fleetOf = (list: () => WorkerInfo[] | Promise<WorkerInfo[]>) =>
      ({ listWorkers: list }) as unknown as FleetApi;

    it('a local fleet: only a worker of the same role that can take traffic counts', () => {
      let workers = [worker('a'), worker('b', { healthy: false }), worker('c', { draining: true })];
      const check = otherWorkerCheck(fleetOf(() => workers));
      expect(check('a')).toBe(false);
      workers = [...workers, worker('d', { circuit: 'open' }), worker('e', { role: 'prefill' })];
      expect(check('a')).toBe(false);
      workers = [...workers, worker('f')];
      expect(check('a')).toBe(true);
    });

    it('a fleet held elsewhere is asked once, its failure swallowed, and the answer is always yes', async () => {
      let calls = 0;
      const check = otherWorkerCheck(
        fleetOf(() => {
          calls++;
          return Promise.reject(new Error('the object is unreachable'));
        }),
      );
      expect(check('a')).toBe(true);
      expect(check('a')).toBe(true);
      expect(calls).toBe(1);
      await new Promise((r) => setTimeout(r, 0)); // an unhandled rejection would fail the run
    });
  });
});
