import { describe, expect, it } from 'vitest';
import { MetricsRegistry } from '../../src/core/observability/metrics.ts';
import { RetryBudget } from '../../src/core/resilience/retry-budget.ts';
import { FakeClock } from '../support/fake-clock.ts';

function take(budget: RetryBudget, n: number): number {
  let granted = 0;
  for (let i = 0; i < n; i++) if (budget.tryAcquire()) granted++;
  return granted;
}

describe('RetryBudget', () => {
  it('allows ratio × first attempts over the window', () => {
    const clock = new FakeClock();
    const budget = new RetryBudget({ ratio: 0.2, minPerSec: 0 }, clock);
    for (let i = 0; i < 1000; i++) budget.recordRequest();
    expect(budget.allowance()).toBe(200);
    expect(take(budget, 500)).toBe(200);
  });

  it('never allows fewer than minPerSec × window seconds', () => {
    const clock = new FakeClock();
    const budget = new RetryBudget({ ratio: 0.2, minPerSec: 10 }, clock);
    for (let i = 0; i < 10; i++) budget.recordRequest();
    expect(budget.allowance()).toBe(100);
    expect(take(budget, 150)).toBe(100);
  });

  it('forgets requests and retries older than the 10 s window', () => {
    const clock = new FakeClock(0);
    const budget = new RetryBudget({ ratio: 0.5, minPerSec: 0 }, clock);
    for (let i = 0; i < 100; i++) budget.recordRequest();
    expect(take(budget, 100)).toBe(50);
    clock.advance(5_000);
    expect(take(budget, 1)).toBe(0); // still inside the window
    for (let i = 0; i < 10; i++) budget.recordRequest();
    expect(take(budget, 10)).toBe(5);
    clock.advance(5_000); // the first second's 100 requests and 50 retries have left the window
    expect(budget.allowance()).toBe(5);
    expect(take(budget, 10)).toBe(0); // 5 retries from t=5s still count
    clock.advance(5_000);
    expect(budget.allowance()).toBe(0);
  });

  it('with ratio 0 and no floor, never retries', () => {
    const budget = new RetryBudget({ ratio: 0, minPerSec: 0 }, new FakeClock());
    budget.recordRequest();
    expect(budget.tryAcquire()).toBe(false);
  });

  it('says how many retries remain, and exports it as a gauge read at scrape time', async () => {
    const clock = new FakeClock(0);
    const metrics = new MetricsRegistry();
    const budget = new RetryBudget({ ratio: 0.25, minPerSec: 0 }, clock);
    budget.exportGauge(metrics);
    for (let i = 0; i < 10; i++) budget.recordRequest();
    expect(budget.remaining()).toBe(2); // 2.5 allowed: two whole retries
    expect(take(budget, 1)).toBe(1);
    expect(budget.remaining()).toBe(1);
    expect(await metrics.render()).toContain('vllm_router_retry_budget_remaining 1');
    expect(take(budget, 5)).toBe(1);
    expect(budget.remaining()).toBe(0);
    expect(await metrics.render()).toContain('vllm_router_retry_budget_remaining 0');
    clock.advance(10_000); // the window moved on: nothing spent, nothing earned
    expect(budget.remaining()).toBe(0);
    budget.recordRequest();
    budget.recordRequest();
    budget.recordRequest();
    budget.recordRequest();
    expect(await metrics.render()).toContain('vllm_router_retry_budget_remaining 1');
  });
});
