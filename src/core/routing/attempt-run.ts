/**
 * The state of one leg's attempts (the attempt loop's state object): the leg, its exclusions, the
 * backoffs taken, and the retry rules that apply to it; plus the shapes the loop's steps exchange.
 */
import { RouterError } from '../contracts/errors.ts';
import type { AttemptOutcome, RoutedWorker, RouteInput } from '../contracts/fleet-api.ts';
import type { UpstreamResponse } from '../contracts/upstream.ts';
import { backoffDelayMs, maxAttempts, type RetrySettings } from '../resilience/backoff.ts';
import type { Exchange } from './exchange.ts';

/** One leg to send: the regular request, or a prefill or decode leg. */
export interface Leg {
  /** What routing reads: model, routing text and keys. */
  input: RouteInput;
  role?: 'regular' | 'prefill' | 'decode';
  target: string;
  headers: Record<string, string>;
  body: Uint8Array | ReadableStream<Uint8Array> | null;
}

export type LegResult =
  | { kind: 'response'; res: UpstreamResponse; worker: RoutedWorker; lease: number; outcome: AttemptOutcome }
  | { kind: 'error'; error: RouterError; outcome?: AttemptOutcome }
  | { kind: 'aborted' };

/** What a step says comes next: the leg's result, another attempt at once, or one after a wait. */
export type Next =
  | { kind: 'done'; result: LegResult }
  | { kind: 'again' }
  | { kind: 'wait'; delay: number; reason: string };

/** The state of one leg's attempts: exclusions, backoffs so far, and the retry rules that apply. */
export class AttemptRun {
  /** Worker ids excluded after transport failures (reset when no candidate is left). */
  readonly exclude: string[] = [];
  /** Backoffs taken so far (the exponent of the next delay). */
  backoffs = 0;
  /** Only a buffered body can be sent again. */
  readonly buffered: boolean;

  constructor(
    readonly ex: Exchange,
    readonly leg: Leg,
  ) {
    this.buffered = !(leg.body instanceof ReadableStream);
  }

  /** Retry settings for failures on the latest worker (its overrides win). */
  settings(): RetrySettings {
    const { retry } = this.ex.ctx;
    const own = this.ex.worker?.retry;
    return own === undefined ? retry : { ...retry, ...own };
  }

  /** The backoff before the next retry, with jitter from the injected random. */
  nextDelay(): number {
    return backoffDelayMs(this.settings(), this.backoffs, this.ex.ctx.deps.random);
  }

  /** Whether one more attempt may be made; counts the exhaustion or the spent budget otherwise. */
  mayRetry(): boolean {
    const { ctx, call } = this.ex;
    const limit = this.buffered ? maxAttempts(this.settings()) : 1;
    if (this.ex.attempts >= limit) {
      if (limit > 1) ctx.instruments.retriesExhausted.labels(call.route).inc();
      return false;
    }
    if (!ctx.budget.tryAcquire()) {
      ctx.instruments.budgetExhausted.inc();
      return false;
    }
    ctx.instruments.retries.labels(call.route).inc();
    return true;
  }

  /** Backs off before the next attempt; false when the client left or the deadline passed. */
  backOff(delay: number, reason: string): Promise<boolean> {
    const { ctx, call } = this.ex;
    ctx.instruments.backoff.labels(String(this.ex.attempts)).observe(delay / 1000);
    if (ctx.deps.logger.enabled('debug')) {
      ctx.deps.logger.debug('retrying', {
        request_id: call.requestId,
        attempt: this.ex.attempts,
        worker: this.ex.worker?.id,
        reason,
        delay_ms: Math.round(delay),
      });
    }
    this.backoffs++;
    return this.ex.sleep(delay);
  }

  /** The result once the client left or the deadline passed. */
  stopped(): LegResult {
    if (this.ex.clientGone) return { kind: 'aborted' };
    const message = `request timed out after ${this.ex.ctx.timeoutMs} ms`;
    return { kind: 'error', error: new RouterError('upstream_timeout', message) };
  }
}
