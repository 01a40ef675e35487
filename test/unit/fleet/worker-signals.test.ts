/** recordSignals: the latency estimate per request class, its in-place update, and new objects otherwise. */
import { describe, expect, it } from 'vitest';
import { defaultRouterConfig } from '../../../src/core/config/schema.ts';
import {
  initialSignals,
  LATENCY_EWMA_WEIGHT,
  recordSignals,
  SLOW_RECHECK_MS,
  signalSettings,
} from '../../../src/core/fleet/worker-signals.ts';

const settings = signalSettings(defaultRouterConfig());
const at = (now: number, cls: 'stream' | 'unary' = 'unary') => ({
  now,
  routedAt: now,
  cls,
  quarantineMs: 30_000,
});
const ok = (ms: number) => ({ kind: 'success', status: 200, firstByteMs: ms }) as const;

describe('recordSignals', () => {
  it('blends a fresh sample into the estimate (EWMA), in place, keeping the signals object', () => {
    let s = recordSignals(initialSignals(), ok(100), at(1000), settings);
    expect(s.latency.unary).toEqual({ ms: 100, at: 1000 });
    const before = s;
    const estimate = s.latency.unary;
    s = recordSignals(s, ok(200), at(2000), settings);
    expect(s).toBe(before);
    expect(s.latency.unary).toBe(estimate);
    expect(s.latency.unary).toEqual({ ms: 100 + LATENCY_EWMA_WEIGHT * 100, at: 2000 });
  });

  it('replaces a stale estimate with the new sample, and keeps the classes apart', () => {
    let s = recordSignals(initialSignals(), ok(100), at(1000), settings);
    s = recordSignals(s, ok(40), at(1000, 'stream'), settings);
    s = recordSignals(s, ok(900), at(1000 + SLOW_RECHECK_MS), settings);
    expect(s.latency.unary).toEqual({ ms: 900, at: 1000 + SLOW_RECHECK_MS });
    expect(s.latency.stream).toEqual({ ms: 40, at: 1000 });
  });

  it('a failure or a pushback makes a new object and leaves the input as it was', () => {
    const s = recordSignals(initialSignals(), ok(100), at(1000), settings);
    const failed = recordSignals(s, { kind: 'failure', stalled: true }, at(2000), settings);
    expect(failed).not.toBe(s);
    expect(failed.quarantineUntil).toBe(2000 + 30_000);
    expect(s.quarantineUntil).toBe(0);
    expect(s.latency.unary).toEqual({ ms: 100, at: 1000 });
  });

  it('a non-2xx answer or a missing time to first byte leaves the estimate alone', () => {
    const s = recordSignals(initialSignals(), ok(100), at(1000), settings);
    expect(recordSignals(s, { kind: 'success', status: 304, firstByteMs: 5 }, at(2000), settings)).toBe(s);
    expect(recordSignals(s, { kind: 'success', status: 200 }, at(2000), settings)).toBe(s);
    expect(s.latency.unary).toEqual({ ms: 100, at: 1000 });
  });
});
