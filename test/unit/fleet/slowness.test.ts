/**
 * Affinity yields to health: with the default cache_aware policy and prompts sharing a long system
 * prompt, a much slower engine stops getting most of the traffic, is re-measured with one request
 * once its estimate is stale, and ordinary prefix-cache differences among healthy engines do not
 * count as slowness.
 */
import { describe, expect, it } from 'vitest';
import { A, B, makeFleet, once, prompt, routed, share, simulate } from './support.ts';

/** Prompts only A serves first (B can hold them only by serving them later). */
const held = (i: number) => prompt(1000 + i);

const ok = (ms: number) => ({ kind: 'success', status: 200, firstByteMs: ms }) as const;

describe('slow engines', () => {
  it('sends most traffic away from an engine with 400x the latency although it holds the prefix', () => {
    const { fleet, clock } = makeFleet([A, B]);
    const { workers, refused } = simulate(fleet, clock, {
      total: 300,
      concurrency: 10,
      input: (i) => ({ text: prompt(i), stream: i % 2 === 0 }),
      answer: (w) => ({ ms: w === A ? 2000 : 5, outcome: { kind: 'success', status: 200 } }),
    });
    expect(refused).toBe(0);
    expect(share(workers, A)).toBeLessThan(0.15);
  });

  it('does not count a prefix-cache difference among healthy engines as slowness', () => {
    const { fleet } = makeFleet([A, B]);
    // B holds the prompt's prefix (it served it first); A serves other prompts.
    expect(once(fleet, { text: prompt(1), exclude: [A] }, ok(400))).toBe(B);
    expect(once(fleet, { text: 'x'.repeat(700), exclude: [B] }, ok(40))).toBe(A);
    // B is 10x slower than A but only 360 ms: the prefix still wins.
    for (let i = 2; i < 6; i++) expect(once(fleet, { text: prompt(i) }, ok(400))).toBe(B);
  });

  it('drops a worker that is both 4x and 500 ms slower than the fastest, while another is left', () => {
    const { fleet } = makeFleet([A, B]);
    expect(once(fleet, { text: prompt(1), exclude: [A] }, ok(2000))).toBe(B);
    expect(once(fleet, { text: 'x'.repeat(700), exclude: [B] }, ok(40))).toBe(A);
    for (let i = 2; i < 6; i++) expect(once(fleet, { text: prompt(i) }, ok(40))).toBe(A);
    // Soft: the slow one still serves when it is the last.
    expect(once(fleet, { text: prompt(9), exclude: [A] })).toBe(B);
  });

  it('compares latency within the request class (streaming or not)', () => {
    const { fleet } = makeFleet([A, B]);
    expect(once(fleet, { text: prompt(1), stream: true, exclude: [A] }, ok(2000))).toBe(B);
    expect(once(fleet, { text: 'x'.repeat(700), stream: true, exclude: [B] }, ok(10))).toBe(A);
    // Slow streams say nothing about B's non-streaming answers: the prefix wins there.
    for (let i = 2; i < 5; i++) expect(once(fleet, { text: prompt(i) })).toBe(B);
    for (let i = 5; i < 8; i++) expect(once(fleet, { text: prompt(i), stream: true }, ok(10))).toBe(A);
  });

  it('re-measures a slow worker with one request at a time once its estimate is stale', () => {
    const { fleet, clock } = makeFleet([A, B]);
    for (let i = 0; i < 10; i++) expect(once(fleet, { text: held(i), exclude: [B] }, ok(2000))).toBe(A);
    expect(once(fleet, { text: 'x'.repeat(700), exclude: [A] }, ok(5))).toBe(B);
    expect(once(fleet, { text: held(0) }, ok(5))).toBe(B); // A is slow although it holds the prompt
    clock.advance(9_000);
    expect(once(fleet, { text: held(1) }, ok(5))).toBe(B); // A's estimate is 9 s old: still fresh
    clock.advance(1_000);
    // 10 s without a sample: A may take one request again (it holds the prompt and is idle)...
    const probe = routed(fleet.route({ text: held(2) }));
    expect(probe.worker.id).toBe(A);
    // ...but no second one while that one is in flight.
    for (let i = 3; i < 7; i++) expect(once(fleet, { text: held(i) }, ok(5))).toBe(B);
    // The new sample replaces the stale estimate: A recovered and takes its prompts again.
    fleet.settle(probe.lease, ok(6));
    expect(once(fleet, { text: held(7) }, ok(6))).toBe(A);
  });

  it('gives a never-measured idle worker one request when the measured one is slow', () => {
    const { fleet } = makeFleet([A, B]);
    expect(once(fleet, { text: prompt(1), exclude: [B] }, ok(2000))).toBe(A);
    const measuring = routed(fleet.route({ text: prompt(2) }));
    expect(measuring.worker.id).toBe(B);
    // While B's first answer is out, nothing says A is slower: the prefix keeps its pull.
    expect(once(fleet, { text: prompt(3) }, ok(2000))).toBe(A);
    fleet.settle(measuring.lease, ok(5));
    for (let i = 4; i < 8; i++) expect(once(fleet, { text: prompt(i) }, ok(5))).toBe(B);
  });

  it('learns latency only from successful answers (fast 400s and 503s do not make an engine fast)', () => {
    const { fleet, clock } = makeFleet([A, B]);
    expect(once(fleet, { text: prompt(1), exclude: [A] }, ok(800))).toBe(B);
    expect(once(fleet, { text: 'y'.repeat(700), exclude: [B] }, ok(700))).toBe(A);
    for (let i = 0; i < 10; i++) {
      const outcome =
        i < 5 ? ({ kind: 'success', status: 400 } as const) : ({ kind: 'failure', status: 503 } as const);
      expect(once(fleet, { text: 'y'.repeat(700), exclude: [B] }, { ...outcome, firstByteMs: 1 })).toBe(A);
    }
    clock.advance(4_001); // past the 503s' cooldown, with both estimates still fresh
    // A's estimate is still 700 ms, B's 800 ms: neither is slow, so the prefix keeps B.
    for (let i = 2; i < 5; i++) expect(once(fleet, { text: prompt(i) }, ok(800))).toBe(B);
  });

  it('is off with --slow-worker-factor 0', () => {
    const { fleet } = makeFleet([A, B], { circuitBreaker: { slowFactor: 0 } });
    expect(once(fleet, { text: prompt(1), exclude: [A] }, ok(2000))).toBe(B);
    expect(once(fleet, { text: 'x'.repeat(700), exclude: [B] }, ok(40))).toBe(A);
    for (let i = 2; i < 6; i++) expect(once(fleet, { text: prompt(i) }, ok(2000))).toBe(B);
  });
});
