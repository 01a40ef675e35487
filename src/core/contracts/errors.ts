/** Router-generated errors, always answered in the OpenAI error shape plus `x-router-error-code`. */
import { type Answer, toResponse } from './answer.ts';

const ENCODER = new TextEncoder();

export type RouterErrorCode =
  | 'invalid_json'
  | 'invalid_request'
  | 'payload_too_large'
  | 'model_not_found'
  | 'no_available_workers'
  | 'session_required'
  | 'upstream_unreachable'
  | 'upstream_timeout'
  | 'upstream_body_error'
  | 'not_found'
  | 'admission_queue_full'
  | 'admission_queue_timeout'
  | 'buffer_budget_exceeded'
  | 'worker_not_found'
  | 'worker_exists'
  | 'invalid_api_key'
  | 'auth_unavailable'
  | 'forbidden'
  | 'shutdown'
  | 'internal_error';

const ERROR_TYPES: Record<RouterErrorCode, { status: number; type: string }> = {
  invalid_json: { status: 400, type: 'invalid_request_error' },
  invalid_request: { status: 400, type: 'invalid_request_error' },
  payload_too_large: { status: 413, type: 'invalid_request_error' },
  model_not_found: { status: 404, type: 'invalid_request_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  admission_queue_full: { status: 429, type: 'rate_limit_error' },
  admission_queue_timeout: { status: 503, type: 'service_unavailable_error' },
  /** Request bodies buffered at once would exceed --max-buffered-bytes-total (sent with Retry-After). */
  buffer_budget_exceeded: { status: 503, type: 'service_unavailable_error' },
  worker_not_found: { status: 404, type: 'invalid_request_error' },
  worker_exists: { status: 409, type: 'invalid_request_error' },
  /** Refused by a security rule (admin guard, worker URL allowlist); the message names the flag. */
  forbidden: { status: 403, type: 'permission_error' },
  no_available_workers: { status: 503, type: 'service_unavailable_error' },
  /** The configured policy routes by session (least_loaded) and the request carries no session id. */
  session_required: { status: 503, type: 'service_unavailable_error' },
  upstream_unreachable: { status: 502, type: 'upstream_error' },
  upstream_timeout: { status: 504, type: 'upstream_error' },
  /** The engine's status arrived, then its body broke: never retried (no second generation). */
  upstream_body_error: { status: 502, type: 'upstream_error' },
  /** Client auth: no bearer token, a malformed one, or one the validation URLs refused. */
  invalid_api_key: { status: 401, type: 'authentication_error' },
  /** Client auth: no validation URL accepted the token and one could not be asked (sent with Retry-After). */
  auth_unavailable: { status: 503, type: 'service_unavailable_error' },
  /** The router is shutting down: the grace period ran out before the request finished. */
  shutdown: { status: 503, type: 'shutdown' },
  internal_error: { status: 500, type: 'internal_error' },
};

export class RouterError extends Error {
  readonly code: RouterErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  /** Sent as Retry-After (seconds) with the error. */
  readonly retryAfterSecs: number | undefined;

  constructor(
    code: RouterErrorCode,
    message: string,
    options?: { param?: string; cause?: unknown; retryAfterSecs?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    const meta = ERROR_TYPES[code];
    this.code = code;
    this.status = meta.status;
    this.type = meta.type;
    this.param = options?.param ?? null;
    this.retryAfterSecs = options?.retryAfterSecs;
  }
}

export interface ErrorEnvelope {
  error: { message: string; type: string; code: string; param: string | null };
}

/**
 * Transport detail that must never reach a client (the log line keeps it): socket and DNS error
 * codes, undici's wording, stack frames.
 */
const TRANSPORT_DETAIL =
  /\b(?:UND_ERR_[A-Z_]+|ECONN(?:REFUSED|RESET|ABORTED)|EPIPE|E(?:HOST|NET)UNREACH|ETIMEDOUT|ENOTFOUND|EAI_AGAIN)\b|other side closed|fetch failed|\n\s+at /;

/** A server error's message, unless it carries transport detail: then a generic one. */
export function clientMessage(err: RouterError): string {
  if (err.status < 500 || !TRANSPORT_DETAIL.test(err.message)) return err.message;
  return err.type === 'upstream_error' ? 'worker connection failed' : 'a service the router needs failed';
}

export function errorEnvelope(err: RouterError): ErrorEnvelope {
  return { error: { message: clientMessage(err), type: err.type, code: err.code, param: err.param } };
}

/** A complete error answer; extra headers (request id, worker id) are merged in. */
export function errorAnswer(err: RouterError, headers?: Record<string, string>): Answer {
  const all: Record<string, string> = {
    'content-type': 'application/json',
    'x-router-error-code': err.code,
    ...headers,
  };
  if (err.retryAfterSecs !== undefined) all['retry-after'] = String(err.retryAfterSecs);
  return { status: err.status, headers: all, body: ENCODER.encode(JSON.stringify(errorEnvelope(err))) };
}

/** `errorAnswer` as a Web Response. */
export function errorResponse(err: RouterError, headers?: Record<string, string>): Response {
  return toResponse(errorAnswer(err, headers));
}
