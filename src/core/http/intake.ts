/**
 * Reading an inference request's body once: buffered (and parsed when it is JSON) so it can be
 * retried, or, when routing does not need it and retries are off or it is too large to keep,
 * streamed through for a single attempt. Bad input is refused here (400, 413, 503) and never reaches
 * an engine; a buffered body's bytes stay reserved against the router-wide budget until the
 * exchange finishes (it is kept for retries).
 */
import type { RouterConfig } from '../config/schema.ts';
import type { RouterError } from '../contracts/errors.ts';
import type { PolicyNeeds } from '../policies/policy.ts';
import { policyNeeds } from '../policies/registry.ts';
import { type JsonObject, PD_ROUTES } from '../routing/pd-bodies.ts';
import type { PipelineContext } from '../routing/pipeline.ts';
import {
  isJsonContentType,
  parseJsonBody,
  type RequestInfo,
  requestInfoFromJson,
} from '../routing/request-info.ts';
import { extractRoutingInput, type HeaderLookup } from '../routing/routing-input.ts';
import { readBody, tooLargeToBuffer } from './body.ts';
import type { BodyBudget, Reservation } from './body-budget.ts';
import type { Inbound } from './inbound.ts';
import { guardedUpload } from './upload-guard.ts';

/** What every inference request reads the same way, fixed at startup. */
export interface IntakeRules {
  limit: number;
  maxBuffered: number;
  needs: PolicyNeeds;
  readsRequest: boolean;
  retriesOn: boolean;
  sessionKey: string | undefined;
  /** Longer routing keys and session ids are ignored (no affinity). */
  maxKeyBytes: number;
}

export function intakeRules(config: RouterConfig): IntakeRules {
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

export type Intake = {
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

/** A body nothing reads: streamed when retries are off, or too large to keep for a retry. */
function otherStreams(header: HeaderLookup, rules: IntakeRules): boolean {
  return !rules.retriesOn || tooLargeToBuffer(header, rules.maxBuffered);
}

/**
 * Reads the request body once. Throws the RouterError to answer with (400, 413, 503), the budget
 * already returned.
 */
export async function intake(
  inbound: Inbound,
  ctx: PipelineContext,
  route: { path: string; jsonRequired: boolean },
  rules: IntakeRules,
  budget: BodyBudget,
): Promise<Intake> {
  const { method, header } = inbound;
  if (method === 'GET' || method === 'HEAD') return { body: null, info: { stream: false } };
  const json = route.jsonRequired || isJsonContentType(header('content-type'));
  // A JSON body is always read and parsed, so malformed JSON, an unknown model or a body nested too
  // deep never reaches an engine (SMG streams some JSON bodies unread; this router does not).
  if (!json && otherStreams(header, rules)) {
    // Unread, one attempt: the engine receives the body while the client is still sending it.
    if (rules.retriesOn) ctx.instruments.retryForfeited.inc();
    const upload = guardedUpload(inbound, rules.limit);
    return { body: upload.stream, info: { stream: false }, uploadFault: upload.fault };
  }
  const { bytes, reservation } = await readBody(inbound, rules.limit, budget);
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
