/**
 * The rules for a worker URL added at runtime (POST /workers, POST /add_worker?url=): http or https,
 * no user:password@, no query (not even a bare `?`), no fragment, and, when --worker-url-allowlist
 * is given, a host it lists. A URL the router forwards to must be a base it can append paths to:
 * a query would swallow them (`http://internal/?` + `/v1/x` asks `http://internal/` for its page).
 * Messages name the rule, never the URL (it may carry a password).
 */
import { z } from 'zod';
import { hostMatcher } from '../config/host-patterns.ts';
import { errorResponse, RouterError } from '../contracts/errors.ts';

const CREDENTIALS = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i;

/** The first rule `value` breaks, as a message; undefined when it follows them all. */
export function workerUrlProblem(value: string): string | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  if (/[\s\\\u0000-\u001f\u007f]/.test(value)) {
    return 'must not contain whitespace, control characters or backslashes';
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http:// or https://';
  if (url.username !== '' || url.password !== '' || CREDENTIALS.test(value)) {
    return 'must not contain credentials (user:password@)';
  }
  if (url.hostname === '') return 'must name a host';
  if (value.includes('?')) return 'must not have a query (?), not even an empty one';
  if (value.includes('#')) return 'must not have a fragment (#)';
  return undefined;
}

/** The `url` field of an added worker: the rules above, then the trailing slash removed. */
export const workerUrlField = z
  .string({ error: 'required: an http:// or https:// URL' })
  .trim()
  .superRefine((value, ctx) => {
    const problem = workerUrlProblem(value);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  })
  .transform((url) => url.replace(/\/+$/, ''));

/** Checks a raw `?url=` value: the 400 naming the rule, or the normalized URL. */
export function parseWorkerUrl(
  raw: string | undefined,
): { ok: true; url: string } | { ok: false; response: Response } {
  if (raw === undefined || raw === '') return { ok: false, response: urlError('url: required') };
  const parsed = workerUrlField.safeParse(raw);
  if (parsed.success) return { ok: true, url: parsed.data };
  return { ok: false, response: urlError(`url: ${parsed.error.issues[0]?.message ?? 'invalid'}`) };
}

function urlError(message: string): Response {
  return errorResponse(new RouterError('invalid_request', message, { param: 'url' }));
}

/** The 403 for a URL whose host --worker-url-allowlist does not list; undefined when allowed. */
export function allowlistRefusal(allowlist: readonly string[], url: string): Response | undefined {
  if (allowlist.length === 0) return undefined;
  const host = new URL(url).hostname;
  if (hostMatcher(allowlist)(host)) return undefined;
  return errorResponse(
    new RouterError('forbidden', `url: host ${host} is not in --worker-url-allowlist`, { param: 'url' }),
  );
}
