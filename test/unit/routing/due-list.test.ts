/**
 * One timer for members that expire at times of their own (due-list.ts), and the idle limit of
 * relayed answers on it (stream-relay.ts): every member expires at its own due time, one whose due
 * time moved later is not expired early, a member that left never expires, an empty list holds no
 * timer; several silent or busy streams share one timer, and a silent one is cut visibly.
 */
import { describe, expect, it } from 'vitest';
import { DueList, type Expiring } from '../../../src/core/routing/due-list.ts';
import { relaySource } from '../../../src/core/routing/stream-relay.ts';
import { FakeClock } from '../../support/fake-clock.ts';

function member(due: number) {
  const m = { slot: -1, due, expired: 0, dueAt: () => m.due, expire: () => void m.expired++ };
  return m satisfies Expiring;
}

describe('DueList', () => {
  it('many members hold one timer; each expires once at its own due time; empty, no timer', () => {
    const clock = new FakeClock();
    const list = new DueList(clock);
    const t0 = clock.monotonic();
    const members = [300, 100, 200].map((d) => member(t0 + d));
    for (const m of members) list.add(m);
    expect(clock.pendingTimers).toBe(1);
    clock.advance(99);
    expect(members.map((m) => m.expired)).toEqual([0, 0, 0]);
    clock.advance(1);
    expect(members.map((m) => m.expired)).toEqual([0, 1, 0]);
    clock.advance(100);
    expect(members.map((m) => m.expired)).toEqual([0, 1, 1]);
    clock.advance(100);
    expect(members.map((m) => m.expired)).toEqual([1, 1, 1]);
    expect(list.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a due time that moved later is waited out; a member that left never expires', () => {
    const clock = new FakeClock();
    const list = new DueList(clock);
    const t0 = clock.monotonic();
    const moving = member(t0 + 100);
    const leaving = member(t0 + 150);
    list.add(moving);
    list.add(leaving);
    moving.due = t0 + 400; // it delivered a chunk meanwhile
    clock.advance(100);
    expect(moving.expired).toBe(0);
    list.delete(leaving);
    clock.advance(300);
    expect([moving.expired, leaving.expired]).toEqual([1, 0]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('takeAll empties the list and stops the timer', () => {
    const clock = new FakeClock();
    const list = new DueList(clock);
    list.add(member(clock.monotonic() + 10));
    list.add(member(clock.monotonic() + 20));
    expect(list.takeAll()).toHaveLength(2);
    expect(clock.pendingTimers).toBe(0);
  });
});

/** A chunk source the test feeds by hand: each read waits for the next `push` or `end`. */
function handFed() {
  const waiting: ((r: ReadableStreamReadResult<Uint8Array>) => void)[] = [];
  const queued: ReadableStreamReadResult<Uint8Array>[] = [];
  let cancelled: unknown;
  const give = (r: ReadableStreamReadResult<Uint8Array>) => {
    const w = waiting.shift();
    if (w) w(r);
    else queued.push(r);
  };
  const reader = {
    read: () =>
      new Promise<ReadableStreamReadResult<Uint8Array>>((resolve) => {
        const q = queued.shift();
        if (q) resolve(q);
        else waiting.push(resolve);
      }),
    cancel: (reason?: unknown) => {
      cancelled = reason;
      give({ done: true, value: undefined });
      return Promise.resolve();
    },
  };
  return {
    source: { getReader: () => reader, cancel: (reason?: unknown) => reader.cancel(reason) },
    push: (text: string) => give({ done: false, value: new TextEncoder().encode(text) }),
    end: () => give({ done: true, value: undefined }),
    cancelled: () => cancelled,
  };
}

describe('the idle limit of relayed answers on one list', () => {
  it('three streams hold one timer; the silent one is cut with an SSE error event, the others go on', async () => {
    const clock = new FakeClock();
    const watch = new DueList(clock, { watchdog: true });
    const feeds = [handFed(), handFed(), handFed()];
    const ends: string[] = [];
    const relays = feeds.map((f, i) =>
      relaySource(f.source, {
        sse: true,
        idle: { ms: 1000, clock, watch },
        onDone: (end) => ends.push(`${i}:${end}`),
      }).getReader(),
    );
    expect(clock.pendingTimers).toBe(1);
    const dec = new TextDecoder();
    const next = async (i: number) => {
      const r = await (relays[i] as (typeof relays)[number]).read();
      return r.done ? 'done' : dec.decode(r.value);
    };
    for (const [i, f] of feeds.entries()) f.push(`data: ${i}\n\n`);
    expect(await Promise.all([0, 1, 2].map(next))).toEqual(['data: 0\n\n', 'data: 1\n\n', 'data: 2\n\n']);
    clock.advance(600);
    (feeds[1] as ReturnType<typeof handFed>).push('data: more\n\n');
    (feeds[2] as ReturnType<typeof handFed>).push('data: more\n\n');
    expect(await next(1)).toBe('data: more\n\n');
    expect(await next(2)).toBe('data: more\n\n');
    const silent = next(0);
    clock.advance(400); // stream 0: 1000 ms without a chunk
    const cut = await silent;
    expect(cut).toContain('"type":"upstream_stream_error"');
    expect(cut).not.toContain('[DONE]');
    expect(await next(0)).toBe('done');
    expect(ends).toEqual(['0:error']);
    expect(clock.pendingTimers).toBe(1); // the other two still watched, on the same timer
    (feeds[1] as ReturnType<typeof handFed>).end();
    (feeds[2] as ReturnType<typeof handFed>).end();
    expect([await next(1), await next(2)]).toEqual(['done', 'done']);
    expect(ends.sort()).toEqual(['0:error', '1:end', '2:end']);
    expect(clock.pendingTimers).toBe(0);
  });
});
