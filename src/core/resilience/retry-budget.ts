/**
 * Retry budget: over a sliding window (10 s in one-second buckets), retries may add at most
 * `ratio` of the first attempts, and never fewer than `minPerSec` per second of window. Over
 * budget, the caller passes the response through instead of retrying: a fleet-wide outage does not
 * become a retry storm.
 */
import type { Clock } from '../contracts/runtime.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';

export const RETRY_BUDGET_WINDOW_SECS = 10;

export interface RetryBudgetSettings {
  ratio: number;
  minPerSec: number;
}

export class RetryBudget {
  private readonly stamps = new Array<number>(RETRY_BUDGET_WINDOW_SECS).fill(Number.NEGATIVE_INFINITY);
  private readonly requests = new Array<number>(RETRY_BUDGET_WINDOW_SECS).fill(0);
  private readonly retries = new Array<number>(RETRY_BUDGET_WINDOW_SECS).fill(0);

  constructor(
    private readonly settings: RetryBudgetSettings,
    private readonly clock: Clock,
  ) {}

  /** The bucket of the current second, emptied if it last held an older second. */
  private slot(sec: number): number {
    const i = ((sec % RETRY_BUDGET_WINDOW_SECS) + RETRY_BUDGET_WINDOW_SECS) % RETRY_BUDGET_WINDOW_SECS;
    if (this.stamps[i] !== sec) {
      this.stamps[i] = sec;
      this.requests[i] = 0;
      this.retries[i] = 0;
    }
    return i;
  }

  private sum(counts: number[], sec: number): number {
    let total = 0;
    for (let i = 0; i < RETRY_BUDGET_WINDOW_SECS; i++) {
      if ((this.stamps[i] as number) > sec - RETRY_BUDGET_WINDOW_SECS) total += counts[i] as number;
    }
    return total;
  }

  private second(): number {
    return Math.floor(this.clock.monotonic() / 1000);
  }

  /** Counts a request's first attempt. */
  recordRequest(): void {
    (this.requests[this.slot(this.second())] as number)++;
  }

  /** Retries the window allows in total right now. */
  allowance(): number {
    const sec = this.second();
    return Math.max(
      this.settings.ratio * this.sum(this.requests, sec),
      this.settings.minPerSec * RETRY_BUDGET_WINDOW_SECS,
    );
  }

  /** Retries the window still allows right now (0: the budget is spent). */
  remaining(): number {
    const sec = this.second();
    return Math.max(0, Math.floor(this.allowance() - this.sum(this.retries, sec)));
  }

  /** Exports `remaining()` as a gauge, read at scrape time. */
  exportGauge(metrics: MetricsRegistry): void {
    const gauge = metrics.gauge(
      'vllm_router_retry_budget_remaining',
      `Retries the retry budget still allows over the last ${RETRY_BUDGET_WINDOW_SECS} s`,
    );
    metrics.addCollector(() => gauge.set(this.remaining()));
  }

  /** Takes one retry from the budget; false (and nothing taken) when it is spent. */
  tryAcquire(): boolean {
    const sec = this.second();
    const slot = this.slot(sec);
    if (this.sum(this.retries, sec) + 1 > this.allowance()) return false;
    (this.retries[slot] as number)++;
    return true;
  }
}
