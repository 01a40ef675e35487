/**
 * One client request's life in the router: its deadline, the abort wiring from the client
 * and the deadline to the engine, the attempt count, and `finish`, which runs exactly once (lease
 * settled, then the report: metrics and the log line) whether the response ends, errors or is
 * abandoned. The report waits for the end of the host's I/O turn where the host defers it
 * (`Reports`, contracts/runtime.ts), so the answer goes out first. The request metrics carry the
 * bounded model label (model-labels.ts), resolved once per request; the log line is at warn for a
 * 5xx, else at info.
 */

import { callbackOf } from '../contracts/callback-of.ts';
import type { AttemptOutcome, RoutedWorker } from '../contracts/fleet-api.ts';
import type { TimerHandle } from '../contracts/runtime.ts';
import { clientAddress } from '../observability/client-address.ts';
import { type ChunkTail, type TokenUsage, usageIn } from '../observability/usage.ts';
import type { PipelineContext, ProxyCall } from './context.ts';

export const CLIENT_GONE = 'client disconnected';
export const TIMED_OUT = 'request timeout';
export const ABANDONED = 'attempt abandoned';
export const SHUTDOWN = 'router shutting down';

const expire = (ex: Exchange) => ex.expire();
const clientLeft = (ex: Exchange) => ex.clientLeft();

export class Exchange {
  readonly started: number;
  /** When the request times out (the clock's monotonic ms). */
  readonly deadline: number;
  /**
   * Why the request stopped (client gone, deadline, shutdown), once it did. Each leg's attempts
   * follow it through `onStop` (AttemptRun); an AbortSignal is made only for code that asks for
   * `signal` (a streamed answer's relay, a backoff), since one costs more than the rest of the
   * exchange's bookkeeping.
   */
  private reason: string | undefined;
  private ctl: AbortController | undefined;
  private readonly stopHooks: ((reason: string) => void)[] = [];
  /** Attempts that reached an engine (free stale-connection resends not counted): x-router-attempts. */
  attempts = 0;
  /** The worker that answers (or the latest one tried). */
  worker: RoutedWorker | undefined;
  /** The lease of the response being relayed (0: none). */
  lease = 0;
  firstChunkAt: number | undefined;
  /** When the response headers went to the client. */
  respondedAt: number | undefined;
  /** The token counts the engine reported, when it did: read from `usageFrom` by the report. */
  private usage: TokenUsage | undefined;
  /** The answer's bytes, or the tail of its stream, that `usage` is read from at the report. */
  usageFrom: Uint8Array | ChunkTail | undefined;
  /** What the report tells, fixed by `finish`: the status, the error type and when it ended. */
  private endStatus = 0;
  private endError: string | undefined;
  private endedAt = 0;
  private modelText: string | undefined;
  /** Called once when the exchange finishes (a plan's own metrics: the decode leg's duration). */
  onFinish: ((status: number) => void) | undefined;
  private timer: TimerHandle | undefined;
  private done = false;
  /** Its place in the router's list of requests in flight (in-flight.ts). */
  slot = -1;

  constructor(
    readonly ctx: PipelineContext,
    readonly call: ProxyCall,
  ) {
    this.started = ctx.deps.clock.monotonic();
    ctx.models.warm(call.info.model, this.started);
    const { clientSignal } = call;
    if (clientSignal.aborted) this.stop(CLIENT_GONE);
    else clientSignal.addEventListener('abort', this.onClientAbort);
    this.deadline = this.started + ctx.timeoutMs;
    // The router's list of requests in flight expires deadlines with one timer for all; without
    // one (a Worker's isolate) the request keeps its own.
    const { inFlight } = ctx.deps;
    if (inFlight) inFlight.add(this);
    else this.timer = ctx.deps.clock.setTimeout(callbackOf(this, expire), ctx.timeoutMs);
  }

  /** When the deadline passes (InFlight's timer). */
  dueAt(): number {
    return this.deadline;
  }

  /** The deadline passed (InFlight's timer). */
  expire(): void {
    this.stop(TIMED_OUT);
  }

  /** The client left. */
  clientLeft(): void {
    this.stop(CLIENT_GONE);
  }

  /** The client signal's listener (callback-of.ts: why not an arrow function here). */
  private readonly onClientAbort = callbackOf(this, clientLeft);

  private stop(reason: string): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    for (const hook of this.stopHooks) hook(reason);
    this.ctl?.abort(reason);
  }

  /** Calls `hook` once when the request stops (at once if it already has). */
  onStop(hook: (reason: string) => void): void {
    if (this.reason !== undefined) hook(this.reason);
    else this.stopHooks.push(hook);
  }

  /** The router is shutting down (InFlight.stop): the request is cut. */
  cutForShutdown(): void {
    this.stop(SHUTDOWN);
  }

  /** Aborted when the request stops. */
  get signal(): AbortSignal {
    if (this.ctl === undefined) {
      this.ctl = new AbortController();
      if (this.reason !== undefined) this.ctl.abort(this.reason);
    }
    return this.ctl.signal;
  }

  /** Why the request stopped, or undefined while it runs. */
  get stopReason(): string | undefined {
    return this.reason;
  }

  get clientGone(): boolean {
    return this.reason === CLIENT_GONE;
  }

  get timedOut(): boolean {
    return this.reason === TIMED_OUT;
  }

  /** The router shut down while this request was still running. */
  get shutDown(): boolean {
    return this.reason === SHUTDOWN;
  }

  /** The request stops here: the client left, the deadline passed or the router shut down. */
  get stopped(): boolean {
    return this.reason !== undefined;
  }

  /** The request's `model` label: a served model, `other`, or empty (resolved once). */
  modelLabel(now = this.ctx.deps.clock.monotonic()): string {
    this.modelText ??= this.ctx.models.label(this.call.info.model, now);
    return this.modelText;
  }

  elapsedMs(): number {
    return this.ctx.deps.clock.monotonic() - this.started;
  }

  remainingMs(): number {
    return this.ctx.timeoutMs - this.elapsedMs();
  }

  /** Waits `ms` on the injected clock; false if the client left or the deadline passed meanwhile. */
  sleep(ms: number): Promise<boolean> {
    const { clock } = this.ctx.deps;
    const signal = this.signal;
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = () => {
        clock.clearTimeout(handle);
        resolve(false);
      };
      const handle = clock.setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Everything that must happen exactly once per request; the report now, or after the host's I/O turn. */
  finish(status: number, outcome: AttemptOutcome | undefined, errorType?: string): void {
    if (this.done) return;
    this.done = true;
    const { deps } = this.ctx;
    if (this.timer !== undefined) deps.clock.clearTimeout(this.timer);
    this.call.clientSignal.removeEventListener('abort', this.onClientAbort);
    deps.inFlight?.delete(this);
    this.call.release();
    if (this.lease !== 0 && outcome) void deps.fleet.settle(this.lease, outcome);
    this.onFinish?.(status);
    this.endStatus = status;
    this.endError = errorType;
    this.endedAt = deps.clock.monotonic();
    if (deps.reports) deps.reports.add(this);
    else this.report();
  }

  /** The request's metrics, observers' notice and log line: called once, after `finish`. */
  report(): void {
    const from = this.usageFrom;
    if (from !== undefined) {
      this.usageFrom = undefined;
      this.usage = from instanceof Uint8Array ? usageIn(from) : from.usage();
    }
    const { endStatus: status, endError: errorType, endedAt: now } = this;
    const ttft = this.firstChunkAt === undefined ? undefined : this.firstChunkAt - this.started;
    this.record(status, errorType, now, ttft);
    if (this.ctx.deps.observations?.active) this.observe(status, errorType, now, ttft);
    this.logLine(status, errorType, now - this.started, ttft);
  }

  /** The request metrics, with the bounded model label. */
  private record(status: number, errorType: string | undefined, now: number, ttft: number | undefined): void {
    const { instruments } = this.ctx;
    const { route, method } = this.call;
    const model = this.modelLabel(now);
    instruments.requests.labels(route, method, String(status), model).inc();
    instruments.duration.labels(route, model).observe((now - this.started) / 1000);
    if (errorType) instruments.errors.labels(route, errorType, model).inc();
    const worker = this.worker?.id;
    if (worker !== undefined && this.respondedAt !== undefined)
      instruments.headers.labels(model, worker).observe((this.respondedAt - this.started) / 1000);
    if (worker !== undefined && ttft !== undefined && this.call.info.stream)
      instruments.ttft.labels(model, worker).observe(ttft / 1000);
    const usage = this.usage;
    if (usage?.prompt !== undefined) instruments.promptTokens.labels(model).inc(usage.prompt);
    if (usage?.completion !== undefined) instruments.completionTokens.labels(model).inc(usage.completion);
  }

  /** Tells the observers (observations.ts). */
  private observe(
    status: number,
    errorType: string | undefined,
    now: number,
    ttft: number | undefined,
  ): void {
    const { info } = this.call;
    const worker = this.worker?.id;
    const usage = this.usage;
    // One flat object per request (an observer is subscribed on every router).
    this.ctx.deps.observations?.emit({
      route: this.call.route,
      method: this.call.method,
      model: info.model,
      stream: info.stream,
      worker,
      status,
      attempts: this.attempts,
      latencyMs: now - this.started,
      ttftMs: ttft,
      error: errorType,
      promptTokens: usage?.prompt,
      completionTokens: usage?.completion,
      at: now,
    });
  }

  /** The request's log line: warn for a 5xx, else info. */
  private logLine(
    status: number,
    errorType: string | undefined,
    elapsed: number,
    ttft: number | undefined,
  ): void {
    const { logger } = this.ctx.deps;
    const level = status >= 500 ? 'warn' : 'info';
    if (!logger.enabled(level)) return;
    const { call } = this;
    logger.log(level, 'request', {
      request_id: call.requestId,
      method: call.method,
      route: call.route,
      model: call.info.model,
      stream: call.info.stream,
      worker: this.worker?.id,
      attempts: this.attempts,
      status,
      ms: Math.round(elapsed * 10) / 10,
      ttft_ms: ttft === undefined ? undefined : Math.round(ttft * 10) / 10,
      prompt_tokens: this.usage?.prompt,
      completion_tokens: this.usage?.completion,
      client: clientAddress(call.peer, call.headers['x-forwarded-for'], this.ctx.trustedProxies),
      error: errorType,
    });
  }
}
