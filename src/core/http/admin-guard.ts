/**
 * The admin guard: decides whether an admin request may run, before its handler.
 *
 * 1. Host (every admin request): the Host header names this router (--host unless a wildcard),
 *    localhost or *.localhost, an IP literal, or a --allowed-hosts pattern. A page on a rebound
 *    DNS name reaches the router with its own name as Host, so it is refused (DNS rebinding).
 * 2. State-changing requests (POST, PUT, DELETE, PATCH): no Origin outside --cors-allowed-origins
 *    other than the router's own (the Origin's host and port are the Host header's: its live fleet
 *    page, served by the router itself), no `Sec-Fetch-Site: cross-site` without such an Origin,
 *    and a JSON body or none at all (a browser's cross-site "simple request" can only send form
 *    and text bodies).
 * 3. Who: with --admin-api-key, `Authorization: Bearer KEY` (compared in constant time over SHA-256
 *    digests); without it, loopback peers only (Node, Deno; and client auth when that is on) or
 *    nobody (Workers, `withoutKey: 'off'`).
 *
 * Every refusal is in the OpenAI error shape and names the rule and the flag that relaxes it; the
 * key itself never appears in an answer.
 */
import type { Context } from 'hono';
import {
  hostMatcher,
  hostOfAuthority,
  ipBits,
  isLoopback,
  isLoopbackAddress,
} from '../config/host-patterns.ts';
import type { RouterConfig } from '../config/schema.ts';
import { errorResponse, RouterError } from '../contracts/errors.ts';
import type { AdminGuard } from './admin.ts';
import { forbiddenBody, isJsonType, mediaTypeOf } from './admin-request.ts';
import type { ClientAuth } from './client-auth.ts';

export interface AdminGuardOptions {
  /** The peer's IP address, where the runtime tells it (Node, Deno); undefined on Workers. */
  peerAddress?: (env: unknown) => string | undefined;
  /** Without --admin-api-key: loopback peers only (Node, Deno) or nobody (Workers). */
  withoutKey: 'loopback' | 'off';
  /** Client auth, when --api-key-validation-urls is set. */
  clientAuth?: ClientAuth;
  /**
   * The Host rule (default on). Workers turn it off: Cloudflare delivers a request only for a host
   * routed to the Worker, so a rebound DNS name cannot reach it, and the Worker's own name is
   * whatever domain it is deployed on.
   */
  hostCheck?: boolean;
}

type Rule = (c: Context) => Response | undefined;
type AsyncRule = (c: Context) => Response | undefined | Promise<Response | undefined>;

const STATE_CHANGING = new Set(['POST', 'PUT', 'DELETE', 'PATCH']);
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]']);

const forbidden = (message: string) => errorResponse(new RouterError('forbidden', message));

/** A header value quoted in a message: short, printable. */
const quote = (value: string) => JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}...` : value);

export function createAdminGuard(config: RouterConfig, options: AdminGuardOptions): AdminGuard {
  const host: Rule = options.hostCheck === false ? () => undefined : hostRule(config);
  const origin = originRule(config.server.corsAllowedOrigins);
  const who = config.admin.apiKey !== undefined ? bearerRule(config.admin.apiKey) : peerRule(options);
  return async (c) => {
    const refused =
      host(c) ?? (STATE_CHANGING.has(c.req.method) ? (origin(c) ?? contentTypeRule(c)) : undefined);
    return refused ?? (await who(c));
  };
}

/** The Host header (and the request URL's host, which differs for an absolute request target). */
function hostRule(config: RouterConfig): Rule {
  const allowed = hostMatcher(config.server.allowedHosts);
  const configured = hostOfAuthority(config.server.host);
  const own = configured === undefined || WILDCARD_HOSTS.has(configured) ? undefined : configured;
  const accepts = (h: string) => h === own || isLoopback(h) || ipBits(h) !== undefined || allowed(h);
  return (c) => {
    for (const authority of [c.req.header('host'), new URL(c.req.url).host]) {
      if (authority === undefined) continue;
      const h = hostOfAuthority(authority);
      if (h !== undefined && accepts(h)) continue;
      return forbidden(
        `admin request refused: Host ${quote(authority)} is not this router's address ` +
          '(DNS rebinding protection); add the name to --allowed-hosts',
      );
    }
    return undefined;
  };
}

const normalizeOrigin = (origin: string) => origin.trim().toLowerCase().replace(/\/+$/, '');

/** The Origin names this router itself: its host and port are the Host header's (checked by rule 1). */
function isOwnOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  try {
    return new URL(origin.trim()).host === host.trim().toLowerCase();
  } catch {
    return false;
  }
}

/** Origin and Sec-Fetch-Site: a browser page of another site may not change the fleet. */
function originRule(corsAllowedOrigins: readonly string[]): Rule {
  const origins = new Set(corsAllowedOrigins.map(normalizeOrigin));
  return (c) => {
    const origin = c.req.header('origin');
    const allowedOrigin =
      origin !== undefined &&
      (origins.has(normalizeOrigin(origin)) || isOwnOrigin(origin, c.req.header('host')));
    if (origin !== undefined && !allowedOrigin) {
      return forbidden(`admin change refused: Origin ${quote(origin)} is not in --cors-allowed-origins`);
    }
    if (c.req.header('sec-fetch-site')?.trim().toLowerCase() === 'cross-site' && !allowedOrigin) {
      return forbidden(
        'admin change refused: a cross-site request (Sec-Fetch-Site: cross-site) needs an Origin ' +
          'listed in --cors-allowed-origins',
      );
    }
    return undefined;
  };
}

/** True when the request announces a body (a length above 0, or a chunked one). */
function declaresBody(c: Context): boolean {
  const length = c.req.header('content-length');
  if (length !== undefined) return length.trim() !== '0';
  return c.req.header('transfer-encoding') !== undefined;
}

const SIMPLE_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);

/** JSON or no body: what a cross-site form or `fetch` without a preflight cannot send. */
function contentTypeRule(c: Context): Response | undefined {
  const type = c.req.header('content-type');
  if (type === undefined) {
    return declaresBody(c) ? forbiddenBody() : undefined;
  }
  if (isJsonType(type)) return undefined;
  const media = mediaTypeOf(type);
  const why = SIMPLE_TYPES.has(media) ? ' (a cross-site form can send it)' : '';
  return forbidden(
    `admin change refused: Content-Type ${quote(media)} is not application/json${why}; ` +
      'send JSON or no body',
  );
}

const encoder = new TextEncoder();

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(text)));
}

/** Compares two digests of equal length without stopping at the first difference. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length && i < b.length; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}

function bearerToken(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^bearer[ \t]+(\S.*)$/i.exec(header.trim());
  return match?.[1]?.trim();
}

function unauthorized(message: string): Response {
  return errorResponse(new RouterError('invalid_api_key', message), {
    'www-authenticate': 'Bearer realm="admin"',
  });
}

/** --admin-api-key: the bearer token must be the key. */
function bearerRule(key: string): AsyncRule {
  // The resolved digest is kept, not its promise: on Workers a promise belongs to one request.
  let expected: Uint8Array | undefined;
  return async (c) => {
    const token = bearerToken(c.req.header('authorization'));
    if (token === undefined) {
      return unauthorized('admin API key required: send Authorization: Bearer <the --admin-api-key value>');
    }
    expected ??= await sha256(key);
    return sameBytes(await sha256(token), expected) ? undefined : unauthorized('invalid admin API key');
  };
}

/** No key: loopback peers (plus client auth when it is on), or nobody on Workers. */
function peerRule(options: AdminGuardOptions): AsyncRule {
  if (options.withoutKey === 'off') {
    return () =>
      forbidden(
        'admin API is off: set the ADMIN_API_KEY secret to enable it (then send Authorization: Bearer <key>)',
      );
  }
  return async (c) => {
    if (!isLoopbackAddress(options.peerAddress?.(c.env))) {
      return forbidden(
        'admin API answers loopback clients only when no --admin-api-key is set: ' +
          'set --admin-api-key (or VLLM_ROUTER_ADMIN_API_KEY) to call it from elsewhere',
      );
    }
    return options.clientAuth ? await options.clientAuth.check(c) : undefined;
  };
}
