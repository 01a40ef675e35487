/**
 * The router-wide budget for request bodies buffered at once (--max-buffered-bytes-total, 0 = no
 * limit). A body is buffered so that it can be retried, and kept until its exchange finishes; the
 * budget bounds the sum over every request in flight, so concurrent large uploads get a 503 with
 * Retry-After (the client may try again once others finish) instead of exhausting memory.
 *
 * A body with a declared length reserves it before the first byte is read; a chunked body grows
 * its reservation chunk by chunk. A body larger than the whole budget is let through only while it
 * is alone (nothing else reserved), so every body within --max-payload-size can eventually pass;
 * while it runs, every other body waits its turn. The budget counts body bytes: the memory a
 * buffered JSON body costs is a few times that (decoded text, parsed object, routing text).
 */
import { RouterError } from '../contracts/errors.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';

/** Seconds a client is told to wait before trying again. */
export const BUDGET_RETRY_AFTER_SECS = 1;

export interface Reservation {
  /** Bytes reserved now. */
  readonly bytes: number;
  /** Adds `n` bytes; false (and nothing added) when the budget cannot hold them. */
  grow(n: number): boolean;
  /** Returns the bytes to the budget; later calls do nothing. */
  release(): void;
}

export class BodyBudget {
  private used = 0;

  /** `limit` 0 means no limit (reservations are still counted for the gauge). */
  constructor(readonly limit: number) {}

  /** Bytes reserved by every request together. */
  get inUse(): number {
    return this.used;
  }

  /** Reserves `bytes`, or returns undefined when the budget cannot hold them. */
  reserve(bytes: number): Reservation | undefined {
    if (!this.fits(bytes, 0)) return undefined;
    this.used += bytes;
    return new Held(this, bytes);
  }

  /** `n` more bytes fit for a reservation holding `own`: within the limit, or alone. */
  fits(n: number, own: number): boolean {
    return this.limit === 0 || this.used + n <= this.limit || this.used === own;
  }

  /** Adds to (or, negative, takes from) the bytes reserved; only reservations call it. */
  adjust(n: number): void {
    this.used += n;
  }

  /** Exports the bytes reserved as `vllm_router_buffered_request_bytes`. */
  exportGauge(metrics: MetricsRegistry): void {
    const gauge = metrics.gauge(
      'vllm_router_buffered_request_bytes',
      'Request bodies buffered at once (bytes reserved against --max-buffered-bytes-total)',
    );
    metrics.addCollector(() => gauge.set(this.used));
  }
}

export function budgetExceeded(budget: BodyBudget, bytes: number | undefined): RouterError {
  const size = bytes === undefined ? 'this request body' : `a request body of ${bytes} bytes`;
  return new RouterError(
    'buffer_budget_exceeded',
    `the router is buffering ${budget.inUse} bytes of request bodies; ${size} would exceed its budget of ${budget.limit} bytes (--max-buffered-bytes-total): retry shortly`,
    { retryAfterSecs: BUDGET_RETRY_AFTER_SECS },
  );
}

/** One request's reservation (a class: one object per request, no closures). */
class Held implements Reservation {
  private released = false;

  constructor(
    private readonly budget: BodyBudget,
    public bytes: number,
  ) {}

  grow(n: number): boolean {
    if (this.released || !this.budget.fits(n, this.bytes)) return false;
    this.bytes += n;
    this.budget.adjust(n);
    return true;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.budget.adjust(-this.bytes);
  }
}
