/**
 * Inference routes: read the body once (intake.ts: size limit, router-wide buffer budget, routing
 * input), hand the request to the pipeline, answer. Bad input, and a body the budget cannot hold,
 * are answered here and never reach an engine. The buffered body's reservation is returned with the
 * admission permit once the exchange finishes. An OPTIONS request is the router's to answer (CORS,
 * cors.ts), never an engine's.
 *
 * `createInference` is the one handler; Hono's routes call it with the context's request
 * (`registerInferenceRoutes`), and a host that serves these paths itself calls `serve` with its own
 * (Node, without building a Web Request: src/adapters/node/direct.ts).
 */
import type { Context, Hono } from 'hono';
import type { RouterConfig } from '../config/schema.ts';
import { type Answer, toResponse } from '../contracts/answer.ts';
import { errorAnswer, RouterError } from '../contracts/errors.ts';
import { clientAddress } from '../observability/client-address.ts';
import type { Logger } from '../observability/logger.ts';
import { upstreamRequestHeaders } from '../routing/headers.ts';
import { type PipelineContext, type ProxyCall, proxyRequest, rejectRequest } from '../routing/pipeline.ts';
import type { Admission } from './admission.ts';
import { BodyBudget, type Reservation } from './body-budget.ts';
import { optionsResponse } from './cors.ts';
import { honoInbound, type Inbound, type InboundHooks } from './inbound.ts';
import { type Intake, intake, intakeRules } from './intake.ts';
import { requestIdOf } from './request-id.ts';

/** POST routes whose body is a JSON request naming a model. */
export const JSON_INFERENCE_ROUTES = [
  '/v1/chat/completions',
  '/v1/completions',
  '/v1/embeddings',
  '/v1/responses',
  '/v1/rerank',
  '/v1/score',
  '/rerank',
  '/score',
  '/generate',
  '/pooling',
  '/classify',
  '/tokenize',
  '/detokenize',
] as const;

/** The route name of every other OpenAI path (audio, files, batches, ...), passed to a worker. */
const PASS_THROUGH = '/v1/*';

const NO_PERMIT = () => {};

export interface Inference {
  /** The POST paths whose body is JSON (exact paths; `serve` takes them as `route`). */
  readonly jsonRoutes: ReadonlySet<string>;
  /** Serves one request of `route` (a JSON route, or `/v1/*`). Throws only on a router bug. */
  serve(route: string, inbound: Inbound): Promise<Answer>;
  /** The 500 for a handler that threw (logged, with the path). */
  internalError(path: string, err: unknown): Answer;
}

/** The permit and the body's reservation, returned together once the exchange finishes. */
function releaseBoth(permit: () => void, reservation: Reservation | undefined): () => void {
  if (!reservation) return permit;
  return () => {
    reservation.release();
    permit();
  };
}

/** Answers a request refused before routing; the log line names its client. */
function rejected(
  ctx: PipelineContext,
  call: { route: string; method: string; requestId: string },
  inbound: Inbound,
  err: RouterError,
): Answer {
  const client = clientAddress(inbound.peer, inbound.header('x-forwarded-for'), ctx.trustedProxies);
  return rejectRequest(ctx, { ...call, client }, err);
}

/** The 500 answer for an error nothing expected, logged with the path it happened on. */
export function internalErrorAnswer(logger: Logger, path: string, err: unknown): Answer {
  logger.error('unhandled error', { path, error: err });
  return errorAnswer(new RouterError('internal_error', 'internal router error'));
}

export function createInference(config: RouterConfig, ctx: PipelineContext, admission: Admission): Inference {
  const idHeaders = config.server.requestIdHeaders.map((name) => name.toLowerCase());
  const rules = intakeRules(config);
  const budget = new BodyBudget(config.server.maxBufferedBytesTotal);
  budget.exportGauge(ctx.deps.metrics);
  admission.exportMetrics(ctx.deps.metrics);
  const jsonRoutes: ReadonlySet<string> = new Set(JSON_INFERENCE_ROUTES);

  const serve = async (route: string, inbound: Inbound): Promise<Answer> => {
    const requestId = requestIdOf(inbound.header, idHeaders, ctx.deps.newId);
    const method = inbound.method;
    const client = inbound.client();
    const permit = admission.enabled ? await admission.acquire(client) : NO_PERMIT;
    if (permit instanceof RouterError) return rejected(ctx, { route, method, requestId }, inbound, permit);
    const jsonRequired = jsonRoutes.has(route);
    let read: Intake;
    try {
      read = await intake(inbound, ctx, { path: route, jsonRequired }, rules, budget);
    } catch (err) {
      permit();
      if (err instanceof RouterError) return rejected(ctx, { route, method, requestId }, inbound, err);
      throw err;
    }
    const peer = inbound.peer;
    const headers = upstreamRequestHeaders(inbound.headerSource(), { peer, url: inbound.url });
    headers['x-request-id'] = requestId; // what every attempt sends, unless a leg names its own
    const call: ProxyCall = {
      route,
      method,
      target: inbound.target,
      headers,
      body: read.body,
      clientSignal: client,
      peer,
      requestId,
      info: read.info,
      release: releaseBoth(permit, read.reservation),
    };
    // Set after, not spread in: a literal with spreads is built property by property.
    if (read.json) call.json = read.json;
    if (read.uploadFault) call.uploadFault = read.uploadFault;
    // Awaited, not returned: an async function that returns a promise adopts it through one more
    // job and two more ticks.
    return await proxyRequest(ctx, call);
  };
  return {
    jsonRoutes,
    serve,
    internalError: (path, err) => internalErrorAnswer(ctx.deps.logger, path, err),
  };
}

export function registerInferenceRoutes(app: Hono, inference: Inference, hooks: InboundHooks): void {
  const handle = (route: string) => async (c: Context) =>
    toResponse(await inference.serve(route, honoInbound(c, hooks)));
  for (const path of inference.jsonRoutes) app.post(path, handle(path));
  // Any other OpenAI path (audio, files, batches, ...) passes through to a selected worker.
  const passThrough = handle(PASS_THROUGH);
  app.all(PASS_THROUGH, (c) => (c.req.method === 'OPTIONS' ? optionsResponse() : passThrough(c)));
}
