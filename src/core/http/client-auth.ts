/**
 * Client authentication (`--api-key-validation-urls`): every route but the open ones needs
 * `Authorization: Bearer <token>`, and a token is good when one validation URL answers 200 to a GET
 * carrying it (see ./token-validator.ts for how answers are read).
 *
 * Verdicts are remembered by the token's SHA-256 in a bounded LRU (./token-cache.ts): accepted ones
 * for --api-key-cache-ttl-secs, refused ones for --api-key-negative-cache-ttl-secs. Checks of one
 * token that arrive together share one validation round. A validator that cannot be asked (down,
 * timing out, 5xx) is never taken for a refusal: the client gets 503 with Retry-After, nothing is
 * remembered, and the token works again as soon as a validator accepts it.
 *
 * The token never reaches a log line, a metric label or an error message.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { RouterConfig } from '../config/schema.ts';
import { type Answer, toResponse } from '../contracts/answer.ts';
import { errorAnswer, RouterError } from '../contracts/errors.ts';
import type { Counter } from '../observability/metrics.ts';
import type { RouterDeps } from '../routing/context.ts';
import { TokenCache, tokenKey } from './token-cache.ts';
import { type ValidationOutcome, validateToken } from './token-validator.ts';

export interface ClientAuth {
  /** undefined when the request carries a valid client token, else the 401/503 to answer with. */
  check(c: Context): Promise<Response | undefined>;
  /** The same check of an `Authorization` header's value (the inference routes served without Hono). */
  checkAuthorization(header: string | undefined): Promise<Answer | undefined>;
  /** Checks every route but the open ones (`isOpen(path)`), before any handler runs. */
  middleware(isOpen: (path: string) => boolean): MiddlewareHandler;
}

/** What client auth needs from the host. */
export type ClientAuthDeps = Pick<RouterDeps, 'clock' | 'upstream' | 'logger' | 'metrics'>;

/** Seconds a client is told to wait (Retry-After) when no validator could be asked. */
export const AUTH_RETRY_AFTER_SECS = 5;

/** Longest token accepted: beyond it the header is malformed (and never hashed or sent anywhere). */
const MAX_TOKEN_LENGTH = 4096;

/** `Bearer <token>`: the scheme in any case, one token of visible ASCII (no spaces, no commas). */
const BEARER = /^Bearer +([\x21-\x2b\x2d-\x7e]+) *$/i;

type CheckResult = 'valid' | 'invalid' | 'unavailable' | 'cached_valid' | 'cached_invalid' | 'missing';

/** The client's bearer token, or undefined when the header is missing or malformed. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined || header.length > MAX_TOKEN_LENGTH + 16) return undefined;
  const token = BEARER.exec(header)?.[1];
  return token !== undefined && token.length <= MAX_TOKEN_LENGTH ? token : undefined;
}

/** A CORS preflight: it carries no credentials by design, so it passes unchecked. */
function isPreflight(c: Context): boolean {
  return c.req.method === 'OPTIONS' && c.req.header('access-control-request-method') !== undefined;
}

function unauthorized(message: string, tokenGiven: boolean): Answer {
  return errorAnswer(new RouterError('invalid_api_key', message), {
    'www-authenticate': tokenGiven ? 'Bearer error="invalid_token"' : 'Bearer',
  });
}

function unavailable(): Answer {
  return errorAnswer(
    new RouterError('auth_unavailable', 'the API key could not be validated right now; try again', {
      retryAfterSecs: AUTH_RETRY_AFTER_SECS,
    }),
  );
}

function answerFor(result: CheckResult): Answer | undefined {
  switch (result) {
    case 'valid':
    case 'cached_valid':
      return undefined;
    case 'missing':
      return unauthorized('missing or malformed Authorization header: expected "Bearer <token>"', false);
    case 'unavailable':
      return unavailable();
    default:
      return unauthorized('invalid API key', true);
  }
}

class TokenChecker {
  private readonly cache: TokenCache;
  /** Validation rounds in flight, by token key: concurrent checks of one token share one. */
  private readonly inFlight = new Map<string, Promise<ValidationOutcome>>();
  private readonly checks: Counter;
  /** Checks waiting for a validation round (their own or a shared one). */
  private waitingChecks = 0;

  constructor(
    private readonly config: RouterConfig['auth'],
    private readonly deps: ClientAuthDeps,
  ) {
    this.cache = new TokenCache({
      clock: deps.clock,
      maxEntries: config.cacheSize,
      validTtlMs: config.cacheTtlSecs * 1000,
      invalidTtlMs: config.negativeCacheTtlSecs * 1000,
    });
    this.checks = deps.metrics.counter(
      'vllm_router_auth_checks_total',
      'Client API key checks by result (valid, invalid, unavailable, cached_valid, cached_invalid, missing)',
      ['result'],
    );
  }

  async check(header: string | undefined): Promise<CheckResult> {
    const result = await this.resolve(header);
    this.checks.labels(result).inc();
    return result;
  }

  private async resolve(header: string | undefined): Promise<CheckResult> {
    const token = bearerToken(header);
    if (token === undefined) return 'missing';
    const key = await tokenKey(token);
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached === 'valid' ? 'cached_valid' : 'cached_invalid';
    this.waitingChecks++;
    try {
      return await this.validate(key, token);
    } finally {
      this.waitingChecks--;
    }
  }

  private validate(key: string, token: string): Promise<ValidationOutcome> {
    const running = this.inFlight.get(key);
    if (running) return running;
    const round = validateToken(
      this.deps,
      { urls: this.config.apiKeyValidationUrls, timeoutMs: this.config.validationTimeoutSecs * 1000 },
      token,
    )
      .then((outcome) => {
        if (outcome !== 'unavailable') this.cache.set(key, outcome);
        return outcome;
      })
      .finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, round);
    return round;
  }

  /** The verdict cache (tests read its keys: hashes, never tokens). */
  get verdicts(): TokenCache {
    return this.cache;
  }

  get waiting(): number {
    return this.waitingChecks;
  }
}

/** Client auth with its state exposed, for tests. */
export interface ClientAuthInternals extends ClientAuth {
  /** The verdict cache: keys are token hashes. */
  readonly cache: TokenCache;
  /** Checks waiting for a validation round right now (those sharing one included). */
  waiting(): number;
}

/** undefined when client auth is off (no validation URLs). */
export function createClientAuth(
  config: RouterConfig,
  deps: ClientAuthDeps,
): ClientAuthInternals | undefined {
  if (config.auth.apiKeyValidationUrls.length === 0) return undefined;
  const checker = new TokenChecker(config.auth, deps);
  const checkAuthorization = async (header: string | undefined) => answerFor(await checker.check(header));
  const check = async (c: Context) => {
    const denied = await checkAuthorization(c.req.header('authorization'));
    return denied && toResponse(denied);
  };
  return {
    cache: checker.verdicts,
    waiting: () => checker.waiting,
    check,
    checkAuthorization,
    middleware: (isOpen) => async (c, next) => {
      if (isOpen(c.req.path) || isPreflight(c)) return next();
      const denied = await check(c);
      if (denied) return denied;
      return next();
    },
  };
}
