import { describe, expect, it } from 'vitest';
import {
  backoffDelayMs,
  maxAttempts,
  retryAfterMs,
  retrySettings,
} from '../../src/core/resilience/backoff.ts';
import { seededRandom } from '../support/fake-clock.ts';

describe('backoff schedule', () => {
  const defaults = retrySettings({});

  it('grows by the multiplier from the initial delay: 50, 75, 112.5, 168.75 ms without jitter', () => {
    const s = retrySettings({ jitterFactor: 0 });
    expect([0, 1, 2, 3].map((n) => backoffDelayMs(s, n, () => 0.5))).toEqual([50, 75, 112.5, 168.75]);
  });

  it('applies the cap before the jitter', () => {
    const s = retrySettings({
      initialBackoffMs: 100,
      maxBackoffMs: 1000,
      backoffMultiplier: 10,
      jitterFactor: 0.5,
    });
    expect(backoffDelayMs(s, 5, () => 0)).toBe(500); // 1000 × (1 − 0.5)
    expect(backoffDelayMs(s, 5, () => 0.9999999)).toBeCloseTo(1500, 3); // 1000 × (1 + 0.5)
  });

  it('keeps every jittered delay within base × (1 ± jitter), centred on the base', () => {
    const random = seededRandom(7);
    const draws = Array.from({ length: 10_000 }, () => backoffDelayMs(defaults, 2, random));
    for (const d of draws) {
      expect(d).toBeGreaterThanOrEqual(112.5 * 0.8);
      expect(d).toBeLessThanOrEqual(112.5 * 1.2);
    }
    const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
    expect(mean).toBeGreaterThan(111);
    expect(mean).toBeLessThan(114);
    expect(Math.min(...draws)).toBeLessThan(91);
    expect(Math.max(...draws)).toBeGreaterThan(134);
  });

  it('gives the exact sequence for a seeded random', () => {
    const random = seededRandom(3);
    const sequence = [0, 1, 2, 3].map((n) => backoffDelayMs(defaults, n, random));
    const draws = seededRandom(3);
    const expected = [50, 75, 112.5, 168.75].map((base) => base * (1 + 0.2 * (2 * draws() - 1)));
    sequence.forEach((d, i) => {
      expect(d).toBeCloseTo(expected[i] as number, 9);
    });
    expect(new Set(sequence.map((d, i) => d / ([50, 75, 112.5, 168.75][i] as number))).size).toBe(4);
  });

  it('counts attempts including the first; disabled means one', () => {
    expect(maxAttempts(defaults)).toBe(5);
    expect(maxAttempts(retrySettings({ maxRetries: 1 }))).toBe(1);
    expect(maxAttempts(retrySettings({ disabled: true }))).toBe(1);
  });
});

describe('retry settings cannot be built invalid, in code either', () => {
  it.each([
    [{ jitterFactor: 1.5 }, /retry.jitterFactor: must be between 0 and 1/],
    [{ jitterFactor: -0.1 }, /retry.jitterFactor/],
    [{ backoffMultiplier: 0.5 }, /retry.backoffMultiplier: must be a number >= 1/],
    [
      { initialBackoffMs: 5000, maxBackoffMs: 100 },
      /retry.initialBackoffMs: must not exceed the max backoff/,
    ],
    [{ maxRetries: 0 }, /retry.maxRetries: must be an integer >= 1/],
    [{ maxRetries: 2.5 }, /retry.maxRetries: must be an integer >= 1/],
  ])('%j is refused', (raw, message) => {
    expect(() => retrySettings(raw)).toThrow(message);
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-11-30T12:00:00Z');
  it('reads delta seconds and HTTP dates', () => {
    expect(retryAfterMs('2', now)).toBe(2000);
    expect(retryAfterMs('Mon, 30 Nov 2026 12:00:05 GMT', now)).toBe(5000);
    expect(retryAfterMs('Mon, 30 Nov 2026 11:00:00 GMT', now)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs('-3', now)).toBeUndefined();
  });
});
