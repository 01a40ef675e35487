/**
 * Inference routes: read the body once (size limit, router-wide buffer budget), parse the routing
 * input, hand the request to the pipeline. Bad input, and a body the budget cannot hold, are
 * answered here and never reach an engine. A buffered body's bytes stay reserved until the
 * exchange finishes (it is kept for retries): the budget is returned with the admission permit.
 * An OPTIONS request is the router's to answer (CORS, cors.ts), never an engine's.
 */
import type { Context, Hono } from 'hono';
import type { RouterConfig } from '../config/schema.ts';
import { RouterError } from '../contracts/errors.ts';
import { clientAddress } from '../observability/client-address.ts';
import type { PolicyNeeds } from '../policies/policy.ts';
import { policyNeeds } from '../policies/registry.ts';
import type { ClientLink } from '../routing/context.ts';
import { type RawRequestHeaders, rawHeader, upstreamRequestHeaders } from '../routing/headers.ts';
import { type JsonObject, PD_ROUTES } from '../routing/pd-bodies.ts';
import { type PipelineContext, proxyRequest, rejectRequest } from '../routing/pipeline.ts';
import {
  isJsonContentType,
  parseJsonBody,
  type RequestInfo,
  requestInfoFromJson,
} from '../routing/request-info.ts';
import { extractRoutingInput, type HeaderLookup } from '../routing/routing-input.ts';
import type { Admission } from './admission.ts';
import { readBody, tooLargeToBuffer } from './body.ts';
import { BodyBudget, type Reservation } from './body-budget.ts';
import { optionsResponse } from './cors.ts';
import { requestIdOf } from './request-id.ts';
import { guardedUpload } from './upload-guard.ts';

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

const NO_PERMIT = () => {};

/** Path plus query exactly as the client sent it. */
function targetOf(url: string): string {
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  return slash < 0 ? '/' : url.slice(slash);
}

/** What every inference request reads the same way, fixed at startup. */
interface IntakeRules {
  limit: number;
  maxBuffered: number;
  needs: PolicyNeeds;
  readsRequest: boolean;
  retriesOn: boolean;
  sessionKey: string | undefined;
  /** Longer routing keys and session ids are ignored (no affinity). */
  maxKeyBytes: number;
}

function intakeRules(config: RouterConfig): IntakeRules {
  const { policy } = config;
  const needs = policyNeeds([policy.name, policy.prefill ?? policy.name, policy.decode ?? policy.name]);
  const readsRequest = needs.text || needs.routingKey || needs.sessionId;
  return {
    limit: config.server.maxPayloadSize,
    maxBuffered: config.retry.maxBufferedRequestBytes,
    needs,
    readsRequest,
    retriesOn: !config.retry.disabled && config.retry.maxRetries > 1,
    sessionKey: policy.sessionKey,
    maxKeyBytes: config.sll.maxSessionIdBytes,
  };
}

type Intake = {
  body: Uint8Array | ReadableStream<Uint8Array> | null;
  info: RequestInfo;
  /** The parsed body, kept for requests split into prefill and decode legs. */
  json?: JsonObject;
  /** The buffered body's bytes held against the budget (none when streamed through). */
  reservation?: Reservation;
  /** A streamed upload's client-side failure, once it happened. */
  uploadFault?: () => RouterError | undefined;
};

/** The routing input of a parsed JSON body: model, stream, and the keys the policies read. */
function infoOf(header: HeaderLookup, parsed: unknown, route: string, rules: IntakeRules): RequestInfo {
  const info = requestInfoFromJson(parsed);
  if (!rules.readsRequest) return info;
  const body = parsed as Record<string, unknown>;
  const input = extractRoutingInput(body, route, header, rules.needs, rules.sessionKey, rules.maxKeyBytes);
  return Object.assign(info, input);
}

/** Reads the host's raw headers where it has them (Node: no Headers object is built), else hono's. */
function headerLookup(c: Context, raw: RawRequestHeaders | undefined): HeaderLookup {
  return raw ? (name) => rawHeader(raw, name) : (name) => c.req.header(name);
}

/** A body nothing reads: streamed when retries are off, or too large to keep for a retry. */
function otherStreams(header: HeaderLookup, rules: IntakeRules): boolean {
  return !rules.retriesOn || tooLargeToBuffer(header, rules.maxBuffered);
}

/**
 * Reads the request body once: buffered (and parsed when it is JSON) so it can be retried, or, when
 * routing does not need it and retries are off or it is too large to keep, streamed through for a
 * single attempt. Throws the RouterError to answer with (400, 413, 503), the budget already returned.
 */
async function intake(
  c: Context,
  ctx: PipelineContext,
  route: { path: string; jsonRequired: boolean },
  rules: IntakeRules,
  budget: BodyBudget,
  header: HeaderLookup,
): Promise<Intake> {
  const method = c.req.method;
  if (method === 'GET' || method === 'HEAD') return { body: null, info: { stream: false } };
  const json = route.jsonRequired || isJsonContentType(header('content-type'));
  // A JSON body is always read and parsed, so malformed JSON, an unknown model or a body nested too
  // deep never reaches an engine (SMG streams some JSON bodies unread; this router does not).
  if (!json && otherStreams(header, rules)) {
    // Unread, one attempt: the engine receives the body while the client is still sending it.
    if (rules.retriesOn) ctx.instruments.retryForfeited.inc();
    const upload = guardedUpload(c, rules.limit);
    return { body: upload.stream, info: { stream: false }, uploadFault: upload.fault };
  }
  const { bytes, reservation } = await readBody(c, rules.limit, budget, header);
  if (!route.jsonRequired && !(bytes.byteLength > 0 && json))
    return { body: bytes, info: { stream: false }, reservation };
  try {
    const parsed = parseJsonBody(bytes);
    const info = infoOf(header, parsed, route.path, rules);
    if (ctx.pd && PD_ROUTES.has(route.path))
      return { body: bytes, info, json: parsed as JsonObject, reservation };
    return { body: bytes, info, reservation };
  } catch (err) {
    reservation.release();
    throw err;
  }
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
  peer: string | undefined,
  header: HeaderLookup,
  err: RouterError,
): Response {
  const client = clientAddress(peer, header('x-forwarded-for'), ctx.trustedProxies);
  return rejectRequest(ctx, { ...call, client }, err);
}

export function registerInferenceRoutes(
  app: Hono,
  config: RouterConfig,
  ctx: PipelineContext,
  admission: Admission,
  peerAddress?: (c: Context) => string | undefined,
  rawHeaders?: (c: Context) => RawRequestHeaders | undefined,
  clientLink?: (c: Context) => ClientLink | undefined,
): void {
  const idHeaders = config.server.requestIdHeaders.map((name) => name.toLowerCase());
  const rules = intakeRules(config);
  const budget = new BodyBudget(config.server.maxBufferedBytesTotal);
  budget.exportGauge(ctx.deps.metrics);
  admission.exportMetrics(ctx.deps.metrics);
  const clientOf = (c: Context): ClientLink => clientLink?.(c) ?? c.req.raw.signal;

  const handle = (route: string, jsonRequired: boolean) => async (c: Context) => {
    const raw = rawHeaders?.(c);
    const header = headerLookup(c, raw);
    const requestId = requestIdOf(header, idHeaders, ctx.deps.newId);
    const method = c.req.method;
    const peer = peerAddress?.(c);
    const permit = admission.enabled ? await admission.acquire(c.req.raw.signal) : NO_PERMIT;
    if (permit instanceof RouterError)
      return rejected(ctx, { route, method, requestId }, peer, header, permit);
    let read: Intake;
    try {
      read = await intake(c, ctx, { path: route, jsonRequired }, rules, budget, header);
    } catch (err) {
      permit();
      if (err instanceof RouterError) return rejected(ctx, { route, method, requestId }, peer, header, err);
      throw err;
    }
    return proxyRequest(ctx, {
      route,
      method,
      target: targetOf(c.req.url),
      headers: upstreamRequestHeaders(raw ?? c.req.raw.headers, { peer, url: c.req.url }),
      body: read.body,
      clientSignal: clientOf(c),
      peer,
      requestId,
      info: read.info,
      ...(read.json ? { json: read.json } : {}),
      release: releaseBoth(permit, read.reservation),
      ...(read.uploadFault ? { uploadFault: read.uploadFault } : {}),
    });
  };

  for (const path of JSON_INFERENCE_ROUTES) app.post(path, handle(path, true));
  // Any other OpenAI path (audio, files, batches, ...) passes through to a selected worker.
  const passThrough = handle('/v1/*', false);
  app.all('/v1/*', (c) => (c.req.method === 'OPTIONS' ? optionsResponse() : passThrough(c)));
}
