import { describe, expect, it } from 'vitest';
import { RouterError } from '../../src/core/contracts/errors.ts';
import { Admission, type Release } from '../../src/core/http/admission.ts';
import { MetricsRegistry } from '../../src/core/observability/metrics.ts';
import { FakeClock } from '../support/fake-clock.ts';

const signal = () => new AbortController().signal;

describe('Admission', () => {
  it('is a no-op without a limit', () => {
    const a = new Admission(undefined, 10, 1000, new FakeClock());
    expect(a.enabled).toBe(false);
    expect(typeof a.acquire(signal())).toBe('function');
  });

  it('admits up to the limit, queues FIFO up to the queue size, refuses beyond with 429', async () => {
    const a = new Admission(2, 1, 60_000, new FakeClock());
    const first = a.acquire(signal()) as Release;
    const second = a.acquire(signal()) as Release;
    expect(a.active).toBe(2);
    const queued = a.acquire(signal()) as Promise<Release | RouterError>;
    expect(a.waiting).toBe(1);
    const refused = a.acquire(signal()) as RouterError;
    expect(refused).toBeInstanceOf(RouterError);
    expect(refused.status).toBe(429);
    expect(refused.code).toBe('admission_queue_full');
    expect(refused.retryAfterSecs).toBe(1);
    first();
    first(); // releasing twice frees one slot only
    const third = await queued;
    expect(typeof third).toBe('function');
    expect(a.active).toBe(2);
    second();
    (third as Release)();
    expect(a.active).toBe(0);
  });

  it('times a queued request out with 503 and Retry-After (fake clock)', async () => {
    const clock = new FakeClock();
    const a = new Admission(1, 5, 30_000, clock);
    a.acquire(signal());
    const queued = a.acquire(signal()) as Promise<Release | RouterError>;
    clock.advance(29_999);
    expect(a.waiting).toBe(1);
    clock.advance(1);
    const result = (await queued) as RouterError;
    expect(result.code).toBe('admission_queue_timeout');
    expect(result.status).toBe(503);
    expect(result.retryAfterSecs).toBe(30);
    expect(a.waiting).toBe(0);
  });

  it('drops a queued request whose client leaves', async () => {
    const a = new Admission(1, 5, 30_000, new FakeClock());
    const hold = a.acquire(signal()) as Release;
    const controller = new AbortController();
    const queued = a.acquire(controller.signal) as Promise<Release | RouterError>;
    controller.abort();
    expect(await queued).toBeInstanceOf(RouterError);
    expect(a.waiting).toBe(0);
    hold();
    expect(a.active).toBe(0);
  });

  it('exports permits in use, queue depth and each wait by outcome (fake clock)', async () => {
    const clock = new FakeClock();
    const metrics = new MetricsRegistry();
    const a = new Admission(1, 5, 30_000, clock);
    a.exportMetrics(metrics);
    const hold = a.acquire(signal()) as Release; // a free permit: a wait of 0
    const admitted = a.acquire(signal()) as Promise<Release | RouterError>;
    const leaving = new AbortController();
    const left = a.acquire(leaving.signal) as Promise<Release | RouterError>;
    const timedOut = a.acquire(signal()) as Promise<Release | RouterError>;
    let text = await metrics.render();
    expect(text).toContain('vllm_router_admission_active_requests 1');
    expect(text).toContain('vllm_router_admission_queue_depth 3');
    clock.advance(200);
    leaving.abort();
    await left;
    clock.advance(300);
    hold();
    const next = (await admitted) as Release;
    clock.advance(29_500);
    await timedOut;
    text = await metrics.render();
    const wait = 'vllm_router_admission_queue_wait_seconds';
    expect(text).toContain(`${wait}_count{outcome="admitted"} 2`);
    expect(text).toContain(`${wait}_sum{outcome="admitted"} 0.5`);
    expect(text).toContain(`${wait}_bucket{outcome="admitted",le="0.001"} 1`);
    expect(text).toContain(`${wait}_sum{outcome="client_left"} 0.2`);
    expect(text).toContain(`${wait}_sum{outcome="timed_out"} 30`);
    expect(text).toContain('vllm_router_admission_queue_depth 0');
    next();
    expect(await metrics.render()).toContain('vllm_router_admission_active_requests 0');
  });
});
