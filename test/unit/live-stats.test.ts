/**
 * The live fleet page's statistics on a fake clock: rates, error rates and quantiles over the last
 * minute (per worker and router-wide), the window sliding, the event list (breakers, health,
 * retries, admin changes; bounded, coalesced) and the memory bounds.
 */
import { describe, expect, it } from 'vitest';
import { LiveStats } from '../../src/core/observability/live-stats.ts';
import type { RequestObservation } from '../../src/core/observability/observations.ts';
import { FakeClock } from '../support/fake-clock.ts';

function setup(options = {}) {
  const clock = new FakeClock(1_000_000);
  const stats = new LiveStats(clock, options);
  const observe = (o: Partial<RequestObservation> = {}) =>
    stats.observe({
      route: '/v1/chat/completions',
      method: 'POST',
      stream: false,
      worker: 'http://a',
      status: 200,
      attempts: 1,
      latencyMs: 10,
      at: clock.monotonic(),
      ...o,
    });
  return { clock, stats, observe };
}

describe('LiveStats: the last minute of requests', () => {
  it('counts requests per second, router-wide and per worker, over the window', () => {
    const { clock, stats, observe } = setup();
    clock.advance(60_000); // a full window since start
    for (let i = 0; i < 90; i++) observe({ worker: 'http://a' });
    for (let i = 0; i < 30; i++) observe({ worker: 'http://b' });
    const s = stats.snapshot();
    expect(s.router.requests).toBe(120);
    expect(s.router.requests_per_sec).toBe(2);
    expect(s.workers.get('http://a')?.requests_per_sec).toBe(1.5);
    expect(s.workers.get('http://b')?.requests_per_sec).toBe(0.5);
  });

  it('divides by the time since start while that is under a minute', () => {
    const { clock, stats, observe } = setup();
    clock.advance(10_000);
    for (let i = 0; i < 20; i++) observe();
    expect(stats.snapshot().router.requests_per_sec).toBe(2);
  });

  it('forgets requests older than the window, second by second', () => {
    const { clock, stats, observe } = setup();
    clock.advance(60_000);
    observe({ latencyMs: 500 });
    clock.advance(30_000);
    observe({ latencyMs: 20 });
    expect(stats.snapshot().router.requests).toBe(2);
    clock.advance(30_000); // the first one is 60 s old now
    const s = stats.snapshot();
    expect(s.router.requests).toBe(1);
    expect(s.router.latency_ms).toEqual({ p50: 20, p99: 20 });
    clock.advance(30_000);
    expect(stats.snapshot().router).toEqual({
      requests: 0,
      requests_per_sec: 0,
      error_rate: null,
      latency_ms: null,
      ttft_ms: null,
    });
  });

  it('reuses a slot a minute later without mixing in its old counts', () => {
    const { clock, stats, observe } = setup();
    clock.advance(60_000);
    for (let i = 0; i < 5; i++) observe({ status: 503 });
    clock.advance(60_000); // same slot of the ring, one turn later
    observe({ status: 200 });
    const s = stats.snapshot().router;
    expect(s.requests).toBe(1);
    expect(s.error_rate).toBe(0);
  });

  it('error rate: 5xx and router errors count, a client that left does not', () => {
    const { stats, observe } = setup();
    observe({ status: 200 });
    observe({ status: 502, error: 'upstream_unreachable' });
    observe({ status: 500 });
    observe({ status: 404, error: 'model_not_found' });
    observe({ status: 499, error: 'client_disconnected' });
    observe({ status: 400 }); // the engine's own 4xx answer: not the router's error
    expect(stats.snapshot().router.error_rate).toBe(3 / 6);
  });

  it('p50 and p99 of latency within the histogram precision, clamped to what was seen', () => {
    const { stats, observe } = setup();
    for (let ms = 1; ms <= 1000; ms++) observe({ latencyMs: ms });
    const q = stats.snapshot().router.latency_ms!;
    expect(q.p50).toBeGreaterThan(500 * 0.85);
    expect(q.p50).toBeLessThan(500 * 1.15);
    expect(q.p99).toBeGreaterThan(990 * 0.85);
    expect(q.p99).toBeLessThanOrEqual(1000);
  });

  it('one sample is its own p50 and p99; TTFT only from requests that report it', () => {
    const { stats, observe } = setup();
    observe({ latencyMs: 250, stream: true, ttftMs: 42 });
    observe({ latencyMs: 250 });
    const s = stats.snapshot().router;
    expect(s.latency_ms).toEqual({ p50: 250, p99: 250 });
    expect(s.ttft_ms).toEqual({ p50: 42, p99: 42 });
  });

  it('a worker of its own: p99 of a slow worker is not the fleet p50', () => {
    const { stats, observe } = setup();
    for (let i = 0; i < 99; i++) observe({ worker: 'http://fast', latencyMs: 5 });
    observe({ worker: 'http://slow', latencyMs: 3000 });
    const s = stats.snapshot();
    expect(s.workers.get('http://slow')?.latency_ms).toEqual({ p50: 3000, p99: 3000 });
    expect(s.workers.get('http://fast')?.latency_ms).toEqual({ p50: 5, p99: 5 });
    expect(s.router.latency_ms?.p50).toBe(5);
  });
});

describe('LiveStats: events', () => {
  it('records breaker transitions with the time the breaker opened, and health flips', () => {
    const { clock, stats } = setup();
    stats.fleetEvent('warn', 'worker unhealthy', { worker: 'http://a', error: 'status 503' });
    clock.advance(1000);
    stats.fleetEvent('warn', 'circuit breaker', { worker: 'http://a', from: 'closed', to: 'open' });
    expect(stats.breakerOpenedAt('http://a')).toBe(clock.monotonic());
    clock.advance(1000);
    stats.fleetEvent('info', 'circuit breaker', { worker: 'http://a', from: 'open', to: 'half_open' });
    expect(stats.breakerOpenedAt('http://a')).toBeUndefined();
    stats.fleetEvent('warn', 'worker quarantined: no progress while others answered', { worker: 'http://a' });
    const events = stats.snapshot().events;
    expect(events.map((e) => [e.kind, e.level, e.worker, e.message])).toEqual([
      ['quarantine', 'warn', 'http://a', 'worker quarantined: no progress while others answered'],
      ['breaker', 'info', 'http://a', 'circuit open → half_open'],
      ['breaker', 'warn', 'http://a', 'circuit closed → open'],
      ['health', 'warn', 'http://a', 'worker unhealthy (status 503)'],
    ]);
    expect(events[2]?.time).toBe(1_001_000);
  });

  it('notes retried requests and admin changes', () => {
    const { stats, observe } = setup();
    observe({ attempts: 1 });
    observe({ attempts: 3, worker: 'http://b', status: 200 });
    stats.adminChange('draining', 'http://c');
    stats.adminChange('added', 'http://d');
    expect(stats.snapshot().events.map((e) => `${e.kind} ${e.worker} ${e.message}`)).toEqual([
      'admin http://d added from the admin API',
      'admin http://c draining (removal requested from the admin API)',
      'retry http://b /v1/chat/completions: retried, 3 attempts, answered 200',
    ]);
  });

  it('folds identical recent events into one with a count; keeps at most maxEvents', () => {
    const { clock, stats, observe } = setup({ maxEvents: 5 });
    stats.fleetEvent('warn', 'circuit breaker', { worker: 'http://x', from: 'closed', to: 'open' });
    for (let i = 0; i < 40; i++) {
      observe({ attempts: 2, worker: 'http://a' });
      observe({ attempts: 2, worker: 'http://b' });
    }
    let events = stats.snapshot().events;
    expect(events.map((e) => `${e.kind} ${e.worker} ${e.count}`)).toEqual([
      'retry http://b 40',
      'retry http://a 40',
      'breaker http://x 1',
    ]);
    clock.advance(1000);
    observe({ attempts: 2, worker: 'http://a' }); // folded, and now the newest
    expect(stats.snapshot().events.map((e) => `${e.worker} ${e.count}`)).toEqual([
      'http://a 41',
      'http://b 40',
      'http://x 1',
    ]);
    expect(stats.snapshot().events[0]?.time).toBe(clock.now());
    clock.advance(11_000); // past the folding interval: a new entry
    observe({ attempts: 2, worker: 'http://a' });
    expect(stats.snapshot().events.map((e) => e.count)).toEqual([1, 41, 40, 1]);
    for (let i = 0; i < 20; i++) stats.adminChange('added', `http://w${i}`);
    events = stats.snapshot().events;
    expect(events).toHaveLength(5);
    expect(events[0]?.worker).toBe('http://w19');
    expect(events[4]?.worker).toBe('http://w15');
  });
});

describe('LiveStats: bounded memory', () => {
  it('keeps at most maxSeries worker series, dropping the idlest', () => {
    const { clock, stats, observe } = setup({ maxSeries: 3 });
    for (const w of ['http://1', 'http://2', 'http://3', 'http://4']) {
      observe({ worker: w });
      clock.advance(10);
    }
    expect([...stats.snapshot().workers.keys()]).toEqual(['http://2', 'http://3', 'http://4']);
  });

  it('drops the series of a worker that left once it is idle for a window', () => {
    const { clock, stats, observe } = setup();
    observe({ worker: 'http://gone' });
    observe({ worker: 'http://here' });
    stats.fleetEvent('warn', 'circuit breaker', { worker: 'http://gone', from: 'closed', to: 'open' });
    const current = new Set(['http://here']);
    expect(stats.snapshot(current).workers.has('http://gone')).toBe(true); // its last minute still counts
    expect(stats.breakerOpenedAt('http://gone')).toBeUndefined();
    clock.advance(61_000);
    expect([...stats.snapshot(current).workers.keys()]).toEqual(['http://here']);
  });
});
