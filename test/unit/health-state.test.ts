import { describe, expect, it } from 'vitest';
import {
  type HealthSettings,
  type HealthState,
  initialHealth,
  recordProbe,
} from '../../src/core/fleet/health-state.ts';

const settings: HealthSettings = { failureThreshold: 3, successThreshold: 2 };

/** Applies probe results one a second; returns the states and the steps where `healthy` flipped. */
function probes(
  start: HealthState,
  results: boolean[],
): { state: HealthState; healthy: boolean[]; changed: number[] } {
  let state = start;
  const healthy: boolean[] = [];
  const changed: number[] = [];
  results.forEach((ok, i) => {
    const r = recordProbe(state, settings, ok, i * 1000, ok ? undefined : `HTTP 503 #${i}`);
    state = r.state;
    healthy.push(state.healthy);
    if (r.changed) changed.push(i);
  });
  return { state, healthy, changed };
}

describe('health state', () => {
  it('a new worker with probing is unhealthy until its first successful probe, then healthy at once', () => {
    const s0 = initialHealth(true);
    expect(s0).toMatchObject({ healthy: false, probedOnce: false, consecutiveFailures: 0 });
    const { healthy, changed, state } = probes(s0, [false, false, false, false, true]);
    expect(healthy).toEqual([false, false, false, false, true]);
    expect(changed).toEqual([4]);
    expect(state).toMatchObject({ probedOnce: true, consecutiveSuccesses: 1, consecutiveFailures: 0 });
    expect(state.lastError).toBeUndefined();
  });

  it('without probing a new worker is healthy', () => {
    expect(initialHealth(false)).toMatchObject({ healthy: true, probedOnce: false });
  });

  it('failureThreshold consecutive failures mark a healthy worker unhealthy', () => {
    const { healthy, changed, state } = probes(initialHealth(false), [
      false,
      false,
      true,
      false,
      false,
      false,
    ]);
    expect(healthy).toEqual([true, true, true, true, true, false]);
    expect(changed).toEqual([5]);
    expect(state).toMatchObject({ consecutiveFailures: 3, lastProbeAt: 5000, lastError: 'HTTP 503 #5' });
  });

  it('successThreshold consecutive successes bring a worker that was healthy before back', () => {
    const down = probes(initialHealth(true), [true, false, false, false]);
    expect(down.healthy).toEqual([true, true, true, false]);
    const { healthy, changed } = probes(down.state, [true, false, true, true, true]);
    // one success is not enough (it was healthy before), a failure resets the count, two in a row are
    expect(healthy).toEqual([false, false, false, true, true]);
    expect(changed).toEqual([3]);
  });

  it('reports changed only when healthy flips', () => {
    const s = initialHealth(false);
    const r = recordProbe(s, settings, true, 1);
    expect(r.changed).toBe(false);
    expect(r.state.lastProbeAt).toBe(1);
  });

  it('a failure without an error message still records one; the input is not mutated', () => {
    const s = initialHealth(false);
    const copy = structuredClone(s);
    const r = recordProbe(s, settings, false, 7);
    expect(r.state.lastError).toBe('probe failed');
    expect(s).toEqual(copy);
    expect(JSON.parse(JSON.stringify(r.state))).toEqual(r.state);
  });

  it('thresholds of 1 flip on every result', () => {
    const one = { failureThreshold: 1, successThreshold: 1 };
    let s = initialHealth(false);
    s = recordProbe(s, one, false, 0).state;
    expect(s.healthy).toBe(false);
    s = recordProbe(s, one, true, 1).state;
    expect(s.healthy).toBe(true);
  });
});
