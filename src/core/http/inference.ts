/**
 * Inference routes: read the body once (size limit), parse the routing input, hand the request to
 * the pipeline. Bad input is answered here and never reaches an engine.
 */
import type { Context, Hono } from 'hono';
import type { RouterConfig } from '../config/schema.ts';
import { RouterError } from '../contracts/errors.ts';
import { policyNeeds } from '../policies/registry.ts';
import { upstreamRequestHeaders } from '../routing/headers.ts';
import { type PipelineContext, proxyRequest, rejectRequest } from '../routing/pipeline.ts';
import {
  isJsonContentType,
  parseJsonBody,
  type RequestInfo,
  requestInfoFromJson,
} from '../routing/request-info.ts';
import { extractRoutingInput } from '../routing/routing-input.ts';
import type { Admission } from './admission.ts';
import { readBody, streamBody, tooLargeToBuffer } from './body.ts';
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

const NO_PERMIT = () => {};

/** Path plus query exactly as the client sent it. */
function targetOf(url: string): string {
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  return slash < 0 ? '/' : url.slice(slash);
}

export function registerInferenceRoutes(
  app: Hono,
  config: RouterConfig,
  ctx: PipelineContext,
  admission: Admission,
): void {
  const limit = config.server.maxPayloadSize;
  const idHeaders = config.server.requestIdHeaders;

  const maxBuffered = config.retry.maxBufferedRequestBytes;
  const { policy } = config;
  const needs = policyNeeds([policy.name, policy.prefill ?? policy.name, policy.decode ?? policy.name]);
  const readsRequest = needs.text || needs.routingKey || needs.sessionId;
  const retriesOn = !config.retry.disabled && config.retry.maxRetries > 1;

  const handle = (route: string, jsonRequired: boolean) => async (c: Context) => {
    const requestId = requestIdOf(c, idHeaders);
    const method = c.req.method;
    const permit = admission.enabled ? await admission.acquire(c.req.raw.signal) : NO_PERMIT;
    if (permit instanceof RouterError) return rejectRequest(ctx, { route, method, requestId }, permit);
    let body: Uint8Array | ReadableStream<Uint8Array> | null = null;
    let info: RequestInfo = { stream: false };
    try {
      if (method !== 'GET' && method !== 'HEAD') {
        const contentType = c.req.header('content-type');
        const json = jsonRequired || isJsonContentType(contentType);
        if (!json && tooLargeToBuffer(c, maxBuffered)) {
          // Not needed for routing and too large to keep for a retry: stream it, one attempt.
          body = streamBody(c, limit);
          if (retriesOn) ctx.instruments.retryForfeited.inc();
        } else {
          const bytes = await readBody(c, limit);
          body = bytes;
          if (jsonRequired || (bytes.byteLength > 0 && json)) {
            const parsed = parseJsonBody(bytes);
            info = requestInfoFromJson(parsed);
            if (readsRequest) {
              const header = (name: string) => c.req.header(name);
              const keys = extractRoutingInput(
                parsed as Record<string, unknown>,
                route,
                header,
                needs,
                policy.sessionKey,
              );
              Object.assign(info, keys);
            }
          }
        }
      }
    } catch (err) {
      permit();
      if (err instanceof RouterError) return rejectRequest(ctx, { route, method, requestId }, err);
      throw err;
    }
    return proxyRequest(ctx, {
      route,
      method,
      target: targetOf(c.req.url),
      headers: upstreamRequestHeaders(c.req.raw.headers),
      body,
      clientSignal: c.req.raw.signal,
      requestId,
      info,
      release: permit,
    });
  };

  for (const path of JSON_INFERENCE_ROUTES) app.post(path, handle(path, true));
  // Any other OpenAI path (audio, files, batches, ...) passes through to a selected worker.
  app.all('/v1/*', handle('/v1/*', false));
}
