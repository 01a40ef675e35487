/**
 * The request pipeline: route → send → inspect the status before any byte reaches the client →
 * answer. One exchange object owns the request's lease, timer and abort wiring and finishes
 * exactly once (lease settled, metrics and the log line recorded), whether the response body
 * ends, errors, or the client goes away.
 */
import type { RouterDeps, TimerHandle, UpstreamResponse } from '../deps.ts';
import { errorResponse, RouterError } from '../errors.ts';
import type { AttemptOutcome, RoutedWorker, RouteResult } from '../fleet/fleet-api.ts';
import { clientResponseHeaders, isEventStream } from '../http/headers.ts';
import { relayStream } from '../http/stream-relay.ts';
import type { Instruments } from '../observability/instruments.ts';
import { outcomeForStatus, type StatusClasses } from '../resilience/classify.ts';
import type { RequestInfo } from './request-info.ts';

export interface PipelineContext {
  deps: RouterDeps;
  instruments: Instruments;
  classes: StatusClasses;
  timeoutMs: number;
  /** Bearer sent to engines (--api-key); otherwise the client's Authorization passes through. */
  apiKey?: string;
}

/** One client request, as the pipeline needs it. */
export interface ProxyCall {
  /** Metrics label (the route pattern). */
  route: string;
  method: string;
  /** Path plus query string, forwarded unchanged. */
  target: string;
  /** Headers bound upstream (hop-by-hop already removed). */
  headers: Record<string, string>;
  body: Uint8Array | null;
  clientSignal: AbortSignal;
  requestId: string;
  info: RequestInfo;
}

const CLIENT_GONE = 'client disconnected';
const TIMED_OUT = 'request timeout';
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/** Answers a request rejected before routing (bad input), recording it like any other. */
export function rejectRequest(
  ctx: PipelineContext,
  call: { route: string; method: string; requestId: string },
  error: RouterError,
): Response {
  const { instruments, deps } = ctx;
  instruments.requests.labels(call.route, call.method, String(error.status)).inc();
  instruments.errors.labels(call.route, error.code).inc();
  deps.logger.info('request rejected', {
    request_id: call.requestId,
    route: call.route,
    status: error.status,
    error: error.code,
  });
  return errorResponse(error, { 'x-request-id': call.requestId });
}

export async function proxyRequest(ctx: PipelineContext, call: ProxyCall): Promise<Response> {
  const exchange = new Exchange(ctx, call);
  return exchange.run();
}

class Exchange {
  private readonly started: number;
  private readonly controller = new AbortController();
  private timer: TimerHandle | undefined;
  private lease = 0;
  private worker: RoutedWorker | undefined;
  private attempts = 0;
  private done = false;
  private firstChunkAt: number | undefined;

  constructor(
    private readonly ctx: PipelineContext,
    private readonly call: ProxyCall,
  ) {
    this.started = ctx.deps.clock.monotonic();
  }

  async run(): Promise<Response> {
    const { fleet } = this.ctx.deps;
    const routed: RouteResult = await fleet.route(
      this.call.info.model === undefined ? {} : { model: this.call.info.model },
    );
    if (!routed.ok) return this.fail(routeError(routed, this.call.info.model));
    this.lease = routed.lease;
    this.worker = routed.worker;
    this.attempts = 1;
    this.arm();
    let res: UpstreamResponse;
    try {
      res = await this.ctx.deps.upstream({
        url: routed.worker.url + this.call.target,
        method: this.call.method,
        headers: this.upstreamHeaders(routed.worker),
        body: this.call.body,
        signal: this.controller.signal,
      });
    } catch (err) {
      return this.transportFailure(err);
    }
    return this.respond(res);
  }

  private arm(): void {
    const { clientSignal } = this.call;
    if (clientSignal.aborted) this.controller.abort(CLIENT_GONE);
    else clientSignal.addEventListener('abort', this.onClientAbort);
    this.timer = this.ctx.deps.clock.setTimeout(() => this.controller.abort(TIMED_OUT), this.ctx.timeoutMs);
  }

  private readonly onClientAbort = () => this.controller.abort(CLIENT_GONE);

  private upstreamHeaders(worker: RoutedWorker): Record<string, string> {
    const headers: Record<string, string> = { ...this.call.headers, 'x-request-id': this.call.requestId };
    if (worker.dpRank !== undefined) headers['x-data-parallel-rank'] = String(worker.dpRank);
    if (this.ctx.apiKey !== undefined) headers.authorization = `Bearer ${this.ctx.apiKey}`;
    return headers;
  }

  private transportFailure(err: unknown): Response {
    const reason = this.controller.signal.reason;
    if (reason === CLIENT_GONE) {
      // Nobody is listening; the status is for the log and metrics only.
      this.finish(499, { kind: 'aborted' }, 'client_disconnected');
      return new Response(null, { status: 499 });
    }
    const error =
      reason === TIMED_OUT
        ? new RouterError(
            'upstream_timeout',
            `worker ${this.worker?.id} did not answer within ${this.ctx.timeoutMs} ms`,
          )
        : new RouterError(
            'upstream_unreachable',
            `worker ${this.worker?.id} is unreachable: ${describe(err)}`,
            {
              cause: err,
            },
          );
    return this.fail(error, { kind: 'failure' });
  }

  private respond(res: UpstreamResponse): Response {
    const headers = clientResponseHeaders(res.headers);
    headers['x-request-id'] = this.call.requestId;
    headers['x-routed-worker-id'] = (this.worker as RoutedWorker).id;
    headers['x-router-attempts'] = String(this.attempts);
    const outcome = outcomeForStatus(res.status, this.ctx.classes);
    let body = res.body;
    if (body !== null && NULL_BODY_STATUSES.has(res.status)) {
      if (!(body instanceof Uint8Array)) body.cancel().catch(() => {});
      body = null;
    }
    if (body === null || body instanceof Uint8Array) {
      this.finish(res.status, outcome);
      return new Response(body as BodyInit | null, { status: res.status, headers });
    }
    const relayed = relayStream(body, {
      sse: isEventStream(headers),
      onFirstChunk: () => {
        this.firstChunkAt = this.ctx.deps.clock.monotonic();
      },
      onDone: (end, error) => {
        if (end === 'end') this.finish(res.status, outcome);
        else if (end === 'cancel') this.finish(res.status, { kind: 'aborted' }, 'client_disconnected');
        else this.streamFailed(res.status, error);
      },
      describeError: () => this.streamErrorMessage(),
    });
    return new Response(relayed, { status: res.status, headers });
  }

  private streamFailed(status: number, error: unknown): void {
    this.ctx.instruments.streamErrors.labels((this.worker as RoutedWorker).id).inc();
    this.ctx.deps.logger.warn('upstream stream broke', {
      request_id: this.call.requestId,
      worker: this.worker?.id,
      error: this.streamErrorMessage() + (error === undefined ? '' : `: ${describe(error)}`),
    });
    this.finish(status, { kind: 'failure', status }, 'upstream_stream_error');
  }

  private streamErrorMessage(): string {
    const reason = this.controller.signal.reason;
    if (reason === TIMED_OUT) return `request timed out after ${this.ctx.timeoutMs} ms while streaming`;
    return `the stream from worker ${this.worker?.id} ended unexpectedly`;
  }

  private fail(error: RouterError, outcome?: AttemptOutcome): Response {
    this.finish(error.status, outcome, error.code);
    const headers: Record<string, string> = { 'x-request-id': this.call.requestId };
    if (this.worker) headers['x-routed-worker-id'] = this.worker.id;
    if (this.attempts > 0) headers['x-router-attempts'] = String(this.attempts);
    if (error.status >= 500) this.ctx.deps.logger.warn(error.message, { request_id: this.call.requestId });
    return errorResponse(error, headers);
  }

  /** Everything that must happen exactly once per request. */
  private finish(status: number, outcome: AttemptOutcome | undefined, errorType?: string): void {
    if (this.done) return;
    this.done = true;
    const { deps, instruments } = this.ctx;
    if (this.timer !== undefined) deps.clock.clearTimeout(this.timer);
    this.call.clientSignal.removeEventListener('abort', this.onClientAbort);
    if (this.lease !== 0 && outcome) void deps.fleet.settle(this.lease, outcome);
    const { route, method } = this.call;
    const elapsed = deps.clock.monotonic() - this.started;
    instruments.requests.labels(route, method, String(status)).inc();
    instruments.duration.labels(route).observe(elapsed / 1000);
    if (errorType) instruments.errors.labels(route, errorType).inc();
    if (deps.logger.enabled('info')) {
      deps.logger.info('request', {
        request_id: this.call.requestId,
        route,
        model: this.call.info.model,
        stream: this.call.info.stream,
        worker: this.worker?.id,
        attempts: this.attempts,
        status,
        ms: Math.round(elapsed * 10) / 10,
        ttft_ms:
          this.firstChunkAt === undefined
            ? undefined
            : Math.round((this.firstChunkAt - this.started) * 10) / 10,
        error: errorType,
      });
    }
  }
}

function routeError(result: Extract<RouteResult, { ok: false }>, model: string | undefined): RouterError {
  if (result.code === 'model_not_found') {
    const served = result.models.length > 0 ? result.models.join(', ') : 'none';
    return new RouterError(
      'model_not_found',
      `model ${JSON.stringify(model)} not found; served models: ${served}`,
      {
        param: 'model',
      },
    );
  }
  return new RouterError('no_available_workers', 'no worker is available to serve this request');
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' ? `${code} ${err.message}` : err.message;
  }
  return String(err);
}
