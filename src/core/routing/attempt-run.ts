/**
 * The state of one leg's attempts (the attempt loop's state object): the leg, its hard exclusions
 * (transport failures) and soft ones (engines that pushed back), the backoffs taken, the retry
 * rules that apply, and which engines already counted a failure for this request (one request's
 * retries against one engine are one failure signal, not five). The shapes the steps exchange are
 * in leg.ts.
 */
import { callbackOf } from '../contracts/callback-of.ts';
import { RouterError } from '../contracts/errors.ts';
import type { AttemptOutcome, RoutedWorker, RouteInput } from '../contracts/fleet-api.ts';
import type { BodyWatch, CallSignal } from '../contracts/upstream.ts';
import { backoffDelayMs, maxAttempts, type RetrySettings } from '../resilience/backoff.ts';
import { CallAbort } from '../upstream/call-signal.ts';
import { DueList, type Expiring } from './due-list.ts';
import { ABANDONED, type Exchange, SHUTDOWN } from './exchange.ts';
import type { Leg, LegResult } from './leg.ts';
import { bodyRoutingText } from './routing-input.ts';
import { StreamIdleError } from './stream-idle.ts';

const stopAttempt = (run: AttemptRun, reason: string) => run.stopAttempt(reason);
const abandonAttempt = (run: AttemptRun) => run.abandonAttempt();

/**
 * The state of a leg's attempts. It is also the watch of a body its transport reads whole before
 * answering (`BodyWatch`): from the body's head until the send settles the run sits in the idle
 * list, due the idle limit after the body's last sign of progress, and a body that falls silent
 * that long is cut (its attempt aborted: the transport fails it as a body that broke).
 */
export class AttemptRun implements BodyWatch, Expiring {
  /** Worker ids excluded after transport failures or stalls (reset when no candidate is left). */
  readonly exclude: string[] = [];
  /** Workers that answered a retryable status: other workers are preferred for the next attempts. */
  readonly avoid: string[] = [];
  /** Workers that already recorded a failure for this request. */
  private readonly failedOn = new Set<string>();
  /** Backoffs taken so far (the exponent of the next delay). */
  backoffs = 0;
  /** Only a buffered body can be sent again. */
  readonly buffered: boolean;
  /** Tries against this leg's attempt limit: its attempts plus the ones that found no available worker. */
  tries = 0;
  /** The worker of this leg's latest attempt. */
  worker: RoutedWorker | undefined;
  /**
   * Aborts the current attempt: the request stopped (client gone, deadline, shutdown: the
   * exchange's signal), the stall watch abandoned it, or the leg was called off. Renewed after an
   * abandon, so the leg carries on; each leg has its own (a prefill running beside its decode).
   */
  private ctl = new CallAbort();
  private calledOff = false;
  /** The loop returned its result (a committed answer's signal must not be aborted by `callOff`). */
  finished = false;

  constructor(
    readonly ex: Exchange,
    readonly leg: Leg,
  ) {
    this.buffered = !(leg.body instanceof ReadableStream);
    ex.onStop(callbackOf(this, stopAttempt));
  }

  /** The leg's routing input with its role and stream flag, built once (attempts add exclusions to a copy). */
  get routeInput(): RouteInput {
    if (this.input === undefined) {
      const { leg } = this;
      const { role, stream } = leg;
      // The usual leg routes on its input as it is (nobody changes a routing input); else a copy.
      if (role === undefined && (stream === undefined || stream === leg.input.stream)) this.input = leg.input;
      else {
        const input: RouteInput = { ...leg.input };
        if (role !== undefined) input.role = role;
        if (stream !== undefined) input.stream = stream;
        this.input = input;
      }
    }
    if (this.textReleased) {
      this.textReleased = false;
      this.input.text = bodyRoutingText(this.leg.body as Uint8Array, this.ex.call.route);
    }
    return this.input;
  }

  private input: RouteInput | undefined;
  /** The input's routing text was let go after a decision: the next decision reads it again. */
  private textReleased = false;

  /**
   * Lets the routing text go once a worker is chosen; a retry reads it again from the buffered body
   * (`bodyRoutingText`). Kept for the whole request, a prompt was copied by every young collection
   * that came while its answer was awaited, and the collections came more often: at 64 KB prompts
   * under load, that was most of what `cache_aware` cost over `round_robin` (docs/benchmarks.md,
   * round 29).
   */
  releaseText(): void {
    const input = this.input;
    if (input?.text === undefined || !(this.leg.body instanceof Uint8Array)) return;
    input.text = undefined;
    this.textReleased = true;
  }

  /** The current attempt's abort signal. */
  get attemptSignal(): CallSignal {
    return this.ctl;
  }

  /**
   * `abandonAttempt` as a value, for the stall watch to call, made once per leg (callback-of.ts:
   * why not as an arrow function here). Not a closure inside the async send step either: with that
   * closure (which holds the step's whole context) on the tracker, V8 promoted about 1.8 MB of
   * finished requests to the old generation at every young collection under load on Node
   * (docs/benchmarks.md, round 5).
   */
  readonly abandonCall = callbackOf(this, abandonAttempt);

  /** The request stopped (client gone, deadline, shutdown): the current attempt is aborted. */
  stopAttempt(reason: string): void {
    this.ctl.abort(reason);
  }

  /**
   * Gives up the current attempt (the stall watch found it stuck): its engine request is aborted,
   * and the leg carries on with a fresh signal. No-op once the request stopped.
   */
  abandonAttempt(): void {
    if (this.ctl.aborted) return;
    this.ctl.abort(ABANDONED);
    this.ctl = new CallAbort();
    const reason = this.ex.stopReason;
    if (reason !== undefined) this.ctl.abort(reason);
  }

  /** Stops the leg where it is (its attempt aborted, the leg withdrawn), e.g. its prefill failed. */
  callOff(): void {
    if (this.finished) return;
    this.calledOff = true;
    if (!this.ctl.aborted) this.ctl.abort(ABANDONED);
  }

  /** The leg was called off. */
  get off(): boolean {
    return this.calledOff;
  }

  /** Retry settings for failures on the latest worker (its overrides win). */
  settings(): RetrySettings {
    const { retry } = this.ex.ctx;
    const own = this.worker?.retry;
    return own === undefined ? retry : { ...retry, ...own };
  }

  /** The backoff before the next retry, with jitter from the injected random. */
  nextDelay(): number {
    return backoffDelayMs(this.settings(), this.backoffs, this.ex.ctx.deps.random);
  }

  /** Whether the attempt limit leaves room for one more try (no side effects). */
  withinLimit(): boolean {
    return this.tries < (this.buffered ? maxAttempts(this.settings()) : 1);
  }

  /** Whether one more attempt may be made; counts the exhaustion or the spent budget otherwise. */
  mayRetry(): boolean {
    const { ctx, call } = this.ex;
    if (!this.withinLimit()) {
      if (this.buffered && maxAttempts(this.settings()) > 1)
        ctx.instruments.retriesExhausted.labels(call.route).inc();
      return false;
    }
    if (!ctx.budget.tryAcquire()) {
      ctx.instruments.budgetExhausted.inc();
      return false;
    }
    ctx.instruments.retries.labels(call.route).inc();
    return true;
  }

  /** The outcome to record: a second failure of this request on the same worker counts as neutral. */
  signal(workerId: string, outcome: AttemptOutcome): AttemptOutcome {
    if (outcome.kind !== 'failure') return outcome;
    if (!this.failedOn.has(workerId)) {
      this.failedOn.add(workerId);
      return outcome;
    }
    return { ...outcome, kind: 'neutral' };
  }

  /** Settles an attempt's lease with the outcome this request may still record on that worker. */
  settle(worker: RoutedWorker, lease: number, outcome: AttemptOutcome): Promise<boolean> | boolean {
    return this.ex.ctx.deps.fleet.settle(lease, this.signal(worker.id, outcome));
  }

  /** Its place in the idle list while a buffered body is read (due-list.ts), -1 otherwise. */
  slot = -1;
  /** When the buffered body last made progress (the clock's monotonic ms). */
  private bodyAt = 0;
  /** The idle list of a host without the router's one (a Worker): made with the first body. */
  private ownIdleList: DueList<Expiring> | undefined;

  private get idleMs(): number {
    const { idleTimeoutMs } = this.ex.ctx;
    return this.leg.stream === true ? idleTimeoutMs.stream : idleTimeoutMs.plain;
  }

  private idleList(): DueList<Expiring> {
    const { ctx } = this.ex;
    if (ctx.idleWatch !== undefined) return ctx.idleWatch;
    this.ownIdleList ??= new DueList(ctx.deps.clock, { watchdog: true });
    return this.ownIdleList;
  }

  /** The transport reads a body whole: its head arrived, or one of its chunks. */
  bodyProgress(): void {
    this.bodyAt = this.ex.ctx.deps.clock.monotonic();
    if (this.slot < 0 && this.idleMs > 0) this.idleList().add(this);
  }

  /** The send settled (answered or failed): the body's idle limit no longer applies. */
  bodySettled(): void {
    if (this.slot >= 0) this.idleList().delete(this);
  }

  dueAt(): number {
    return this.bodyAt + this.idleMs;
  }

  /** The buffered body was silent for its idle limit: its attempt is aborted. */
  expire(): void {
    this.ctl.abort(new StreamIdleError(`no data for ${this.idleMs} ms`));
  }

  /** Backs off before the next attempt; false when the client left or the deadline passed. */
  backOff(delay: number, reason: string): Promise<boolean> {
    const { ctx, call } = this.ex;
    ctx.instruments.backoff.labels(String(this.ex.attempts)).observe(delay / 1000);
    if (ctx.deps.logger.enabled('debug')) {
      ctx.deps.logger.debug('retrying', {
        request_id: call.requestId,
        attempt: this.ex.attempts,
        worker: this.worker?.id,
        reason,
        delay_ms: Math.round(delay),
      });
    }
    this.backoffs++;
    return this.ex.sleep(delay);
  }

  /** The result once the client left, the deadline passed, the router shut down or the leg was called off. */
  stopped(): LegResult {
    if (this.calledOff) return { kind: 'withdrawn' };
    if (this.ex.clientGone) return { kind: 'aborted' };
    if (this.ex.shutDown) return { kind: 'error', error: new RouterError('shutdown', SHUTDOWN) };
    const message = `request timed out after ${this.ex.ctx.timeoutMs} ms`;
    return { kind: 'error', error: new RouterError('upstream_timeout', message) };
  }
}
