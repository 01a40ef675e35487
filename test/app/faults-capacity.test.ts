/**
 * Capacity pushback and blips (issue 11), the core app in memory with default flags, the default
 * cache_aware policy and a shared system prompt: with one healthy engine left, no client sees an
 * error; a single engine's blip never turns into router-made 503s.
 */
import { describe, expect, it } from 'vitest';
import { chatBody, checkLeasesAfterEach, startApp } from './app-stack.ts';

checkLeasesAfterEach();

const TWO_ENGINES = '--worker-urls http://a.test http://b.test';

describe('capacity faults (core app in memory)', () => {
  it('engine A answers 503 to 30 % of requests: every client gets a 200, and B takes the retries', async () => {
    const app = await startApp(TWO_ENGINES, {
      'a.test': { failure: { mode: 'status', status: 503, rate: 0.3 }, seed: 11 },
      'b.test': {},
    });
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await app.post(chatBody(`Question ${i}: is the line open?`, { stream: i % 2 === 0 }));
      statuses.push(res.status);
      await res.arrayBuffer();
    }
    expect(statuses).toEqual(Array(40).fill(200));
    const calls = app.net.calls.filter((c) => c.method === 'POST');
    const failedOnA = calls.filter((c) => c.host === 'a.test' && c.status === 503).length;
    expect(failedOnA).toBeGreaterThan(0);
    expect(calls.filter((c) => c.host === 'b.test').length).toBeGreaterThanOrEqual(failedOnA);
  });

  it('a single engine blips (10 × 503, then fine): no router-made 503, the engine serves again at once', async () => {
    const app = await startApp('--worker-urls http://a.test', {
      'a.test': { failure: { mode: 'status', status: 503, first: 10 } },
    });
    const results: { status: number; routerError: string | null }[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await app.post(chatBody(`Blip ${i}`));
      results.push({ status: res.status, routerError: res.headers.get('x-router-error-code') });
      await res.arrayBuffer();
    }
    // Two requests use up the blip (5 attempts each; their last answer is the engine's own 503).
    expect(results.slice(0, 2)).toEqual([
      { status: 503, routerError: null },
      { status: 503, routerError: null },
    ]);
    expect(results.slice(2)).toEqual(Array(6).fill({ status: 200, routerError: null }));
    expect(results.some((r) => r.routerError === 'no_available_workers')).toBe(false);
  });

  it('the only engine behind an open breaker still gets traffic (panic mode): its own answers pass through', async () => {
    const app = await startApp('--worker-urls http://a.test --cb-failure-threshold 1', {
      'a.test': { failure: { mode: 'status', status: 500, first: 6 } },
    });
    const first = await app.post(chatBody('First'));
    await first.arrayBuffer();
    expect(app.router.fleet.getWorker('http://a.test')?.circuit).toBe('open');
    const next = await app.post(chatBody('Second'));
    expect(next.headers.get('x-router-error-code')).toBeNull();
    expect(next.status).toBe(200);
    await next.arrayBuffer();
  });
});
