import { describe, expect, it } from 'vitest';
import { intervalText, ratioInterval } from '../../bench/ratio-interval.ts';

/** Seeded noise: each round's host speed scales both proxies alike, plus each burst's own jitter. */
function rounds(n: number, ratio: number, jitter: number): { a: number[]; b: number[] } {
  let s = 99;
  const r = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < n; i++) {
    const host = 100 + 200 * r();
    a.push(host * ratio * (1 + jitter * (r() - 0.5)));
    b.push(host * (1 + jitter * (r() - 0.5)));
  }
  return { a, b };
}

describe('ratioInterval (benchmarks)', () => {
  it('is a point when every round has the same ratio, however the host swings', () => {
    const { a, b } = rounds(40, 1.07, 0);
    const [low, high] = ratioInterval(a, b);
    expect(low).toBeCloseTo(1.07, 10);
    expect(high).toBeCloseTo(1.07, 10);
  });

  it('holds the ratio of the means and narrows with more rounds', () => {
    const few = rounds(20, 1.05, 0.4);
    const many = rounds(320, 1.05, 0.4);
    const mean = (x: number[]) => x.reduce((p, q) => p + q, 0) / x.length;
    for (const { a, b } of [few, many]) {
      const [low, high] = ratioInterval(a, b);
      expect(low).toBeLessThan(mean(a) / mean(b));
      expect(high).toBeGreaterThan(mean(a) / mean(b));
    }
    const width = ({ a, b }: { a: number[]; b: number[] }) => {
      const [low, high] = ratioInterval(a, b);
      return high - low;
    };
    expect(width(many)).toBeLessThan(width(few) / 2);
    expect(width(many)).toBeGreaterThan(0);
  });

  it('pairs the rounds: a slow round for both does not widen it', () => {
    const { a, b } = rounds(40, 1.05, 0.1);
    // Unpaired, the same bursts would give an interval as wide as the host's swing.
    const shuffled = [...b.slice(20), ...b.slice(0, 20)];
    const [low, high] = ratioInterval(a, b);
    const [uLow, uHigh] = ratioInterval(a, shuffled);
    expect(high - low).toBeLessThan((uHigh - uLow) / 3);
  });

  it('prints the same figures on every call (seeded)', () => {
    const { a, b } = rounds(30, 1.1, 0.3);
    expect(intervalText(a, b)).toBe(intervalText(a, b));
    expect(intervalText(a, b)).toMatch(/^\d\.\d{3}–\d\.\d{3}$/);
  });
});
