/**
 * `vllm-edge-router` on Cloudflare Workers: the fetch handler.
 *
 * Each isolate builds the core app once (cached) from `env.ROUTER_CONFIG` (JSON, validated by the
 * router's schema) and the secrets (`ROUTER_API_KEY` → `workers.apiKey`), around a `FleetApi` that
 * calls the fleet's Durable Objects by RPC (fleet-client.ts): a model's requests go to that model
 * pool's `PoolObject`, everything else to the `FleetObject`. The isolate fetches the engines itself
 * (the Web `fetch` transport) and streams their bytes to the client: only routing calls reach the
 * objects, never bodies. A request that succeeds on its first attempt makes exactly two object
 * calls: `route`, then `settle` (kept alive with `waitUntil`), both to the same object.
 *
 * /metrics is rendered by the main object: the fleet metrics of every object (worker health, load,
 * breakers, policy decisions) plus the request metrics every isolate counts locally and ships,
 * piggybacked on a settle it makes anyway (at most once per METRICS_SHIP_MS) and on every /metrics
 * call it serves. No extra object calls; see docs/cloudflare.md for what that leaves out.
 */
import { waitUntil } from 'cloudflare:workers';
import type { Hono } from 'hono';
import { ConfigError } from '../../core/config/errors.ts';
import { errorResponse, RouterError } from '../../core/contracts/errors.ts';
import { systemRandom } from '../../core/contracts/runtime.ts';
import { createInstruments } from '../../core/observability/instruments.ts';
import type { Logger } from '../../core/observability/logger.ts';
import { MetricsRegistry } from '../../core/observability/metrics.ts';
import { createRouterOn } from '../../core/router.ts';
import { fetchUpstream } from '../../core/upstream/fetch-upstream.ts';
import { readRouterConfig } from './bindings.ts';
import { consoleSink } from './console-sink.ts';
import { FleetClient } from './fleet-client.ts';
import type { FleetEnv } from './fleet-object.ts';
import { familyFrom } from './metrics-sum.ts';
import type { MetricsDelta } from './rpc.ts';

export { FleetObject } from './fleet-object.ts';
export { PoolObject } from './pool-object.ts';

// The main module may export only handlers and classes (workerd rejects other values).

/** Longest time an isolate keeps request metrics before shipping them with a settle. */
const METRICS_SHIP_MS = 1000;

type Family = ReturnType<typeof createInstruments>[keyof ReturnType<typeof createInstruments>];

/**
 * The isolate's metrics registry. The core counts requests into it as usual; `render()` (the
 * core's /metrics route) asks the object instead, shipping what was counted here first.
 */
class IsolateMetrics extends MetricsRegistry {
  client: FleetClient | undefined;
  private families: Family[] = [];
  private shippedAt = 0;

  /** Starts tracking the core's request metric families (after the app created them). */
  track(): void {
    this.families = Object.values(createInstruments(this));
  }

  /** What was counted since the last shipment, if any, and if due (or `force`). Resets it. */
  take(force = false): MetricsDelta | undefined {
    const now = Date.now();
    if (!force && now - this.shippedAt < METRICS_SHIP_MS) return undefined;
    this.shippedAt = now;
    const delta: MetricsDelta = [];
    for (const family of this.families) {
      const lines: string[] = [];
      family.render(lines);
      family.clear();
      const counted = familyFrom(family.name, lines);
      if (counted.series.length > 0) delta.push(counted);
    }
    return delta.length > 0 ? delta : undefined;
  }

  override async render(): Promise<string> {
    if (!this.client) return '';
    return this.client.metricsText(this.take(true));
  }
}

interface WorkerRouter {
  app: Hono;
  client: FleetClient;
  metrics: IsolateMetrics;
  logger: Logger;
}

let cached: { key: string; router: WorkerRouter | { error: ConfigError } } | undefined;

/** The isolate's router for this environment (built on first use, then cached). */
function routerFor(env: FleetEnv): WorkerRouter | { error: ConfigError } {
  const key = [env.ROUTER_CONFIG, env.ROUTER_API_KEY, env.ADMIN_API_KEY, env.API_KEY_VALIDATION_URLS]
    .map((v) => v ?? '')
    .join('\u0000');
  if (cached?.key === key) return cached.router;
  let router: WorkerRouter | { error: ConfigError };
  try {
    router = buildRouter(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    router = { error: err };
  }
  cached = { key, router };
  return router;
}

function buildRouter(env: FleetEnv): WorkerRouter {
  const config = readRouterConfig(env);
  const metrics = new IsolateMetrics();
  let logger: Logger | undefined;
  const client = new FleetClient(env.FLEET, {
    ...(env.FLEET_POOLS ? { pools: env.FLEET_POOLS } : {}),
    // Twice the request timeout: the core settles every lease before then.
    leaseTtlMs: 2 * config.server.requestTimeoutSecs * 1000,
    waitUntil,
    takeMetrics: () => metrics.take(),
    onSettleError: (error) => logger?.warn('settle did not reach the fleet object', { error }),
  });
  metrics.client = client;
  const router = createRouterOn(
    config,
    // No peer address on Workers: without the ADMIN_API_KEY secret the admin API is off.
    {
      upstream: fetchUpstream(),
      logSink: consoleSink,
      random: systemRandom,
      metrics,
      adminWithoutKey: 'off',
      adminHostCheck: false,
    },
    client,
  );
  logger = router.logger;
  const app = router.app;
  metrics.track();
  return { app, client, metrics, logger };
}

/**
 * How a client's departure reaches the core in workerd.
 * - The request is held open (waitUntil) until its response body is over: when a client leaves,
 *   workerd otherwise ends the request without running any of its callbacks (no stream cancel, no
 *   abort event), so the relay would never settle the lease and it would wait for its expiry.
 * - Before the response exists, the departure (request.signal, with the enable_request_signal
 *   flag) aborts the core's client signal: the core cancels the engine request and settles the
 *   lease as aborted. Once the response exists, it cancels the body instead, which the relay
 *   settles as aborted too; through the signal the relay would count a broken upstream stream.
 * Without that flag (and locally: Miniflare does not fire it), a client that leaves before the
 * response exists goes unnoticed: the engine request runs to its end and the response is dropped
 * unread, so its lease waits for its expiry (the request timeout) in the object.
 */
class ClientLink {
  private readonly controller = new AbortController();
  private release!: () => void;
  private reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  private over = false;

  constructor(
    private readonly request: Request,
    ctx: ExecutionContext,
  ) {
    ctx.waitUntil(
      new Promise<void>((resolve) => {
        this.release = resolve;
      }),
    );
    request.signal.addEventListener('abort', () => this.clientLeft(), { once: true });
  }

  /** The request the core sees: the client's, with the signal this link controls. */
  get forCore(): Request {
    return new Request(this.request, { signal: this.controller.signal });
  }

  respond(res: Response): Response {
    if (res.body === null) {
      this.end();
      return res;
    }
    this.reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>(
      { pull: (c) => this.pull(c), cancel: (reason) => this.cancel(reason) },
      { highWaterMark: 0 },
    );
    return new Response(body, res);
  }

  end(): void {
    if (this.over) return;
    this.over = true;
    this.release();
  }

  private clientLeft(): void {
    if (this.over) return;
    if (this.reader) void this.cancel('client disconnected');
    else this.controller.abort('client disconnected');
  }

  private async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    try {
      const result = await (this.reader as ReadableStreamDefaultReader<Uint8Array>).read();
      if (!result.done) {
        controller.enqueue(result.value);
        return;
      }
      controller.close();
    } catch (err) {
      controller.error(err);
    }
    this.end();
  }

  private async cancel(reason: unknown): Promise<void> {
    await this.reader?.cancel(reason).catch(() => {});
    this.end();
  }
}

export default {
  async fetch(request, env, ctx): Promise<Response> {
    const router = routerFor(env);
    if ('error' in router) {
      return errorResponse(
        new RouterError('internal_error', `invalid configuration: ${router.error.message}`),
      );
    }
    const link = new ClientLink(request, ctx);
    try {
      return link.respond(await router.app.fetch(link.forCore, env, ctx));
    } catch (err) {
      link.end();
      throw err;
    }
  },
} satisfies ExportedHandler<FleetEnv>;
