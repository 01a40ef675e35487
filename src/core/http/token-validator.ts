/**
 * One validation round for a client token: each --api-key-validation-urls URL in order gets a GET
 * carrying only `Authorization: Bearer <token>` (and `Accept`), through the injected upstream
 * transport, until one answers exactly 200.
 *
 * - 200 from any URL: valid.
 * - Every URL gave a definite refusal: invalid. A refusal is any other status a server that looked
 *   at the token answers: 401, 403, other 4xx, 2xx other than 200, and 3xx. Redirects are never
 *   followed (the transports do not follow them), so a validator cannot send the token elsewhere.
 * - No 200, and at least one URL was unavailable (connection error, timeout, 5xx, or 408/429, which
 *   say the validator did not decide): unavailable. The caller answers 503 and remembers nothing.
 */
import type { Clock } from '../contracts/runtime.ts';
import { watchdog } from '../contracts/runtime.ts';
import { StaleConnectionError, type Upstream } from '../contracts/upstream.ts';
import type { Logger } from '../observability/logger.ts';
import { discardBody } from '../upstream/body.ts';

export type ValidationOutcome = 'valid' | 'invalid' | 'unavailable';

export interface ValidatorDeps {
  clock: Clock;
  upstream: Upstream;
  logger: Logger;
}

export interface ValidatorSettings {
  urls: readonly string[];
  timeoutMs: number;
}

type UrlAnswer = { kind: 'valid' } | { kind: 'refused' } | { kind: 'unavailable'; reason: string };

/** Statuses that say the validator did not decide (it timed out waiting, or is rate limiting). */
const UNDECIDED = new Set([408, 429]);

function classify(status: number): UrlAnswer {
  if (status === 200) return { kind: 'valid' };
  if (status >= 500 || UNDECIDED.has(status)) return { kind: 'unavailable', reason: `status ${status}` };
  return { kind: 'refused' };
}

/** What went wrong, in words safe to log: a code such as ECONNREFUSED, or the error's name. */
function errorKind(err: unknown): string {
  if (!(err instanceof Error)) return 'error';
  const code = (err as { code?: unknown }).code ?? (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : err.name;
}

async function ask(deps: ValidatorDeps, url: string, token: string, timeoutMs: number): Promise<UrlAnswer> {
  const controller = new AbortController();
  let timedOut = false;
  // A watchdog: the validation does not wait for it, it only bounds how long the validator may take.
  const timer = deps.clock.setTimeout(
    watchdog(() => {
      timedOut = true;
      controller.abort(new Error(`validation timed out after ${timeoutMs} ms`));
    }),
    timeoutMs,
  );
  const send = () =>
    deps.upstream({
      url,
      method: 'GET',
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      body: null,
      signal: controller.signal,
    });
  try {
    // A pooled connection found closed before any byte came back never reached the validator:
    // sent again once, at once, as the pipeline does for engines.
    const res = await send().catch((err: unknown) => {
      if (err instanceof StaleConnectionError && !controller.signal.aborted) return send();
      throw err;
    });
    discardBody(res.body);
    return classify(res.status);
  } catch (err) {
    return { kind: 'unavailable', reason: timedOut ? 'timeout' : errorKind(err) };
  } finally {
    deps.clock.clearTimeout(timer);
  }
}

/** Asks the URLs in order; stops at the first 200. */
export async function validateToken(
  deps: ValidatorDeps,
  settings: ValidatorSettings,
  token: string,
): Promise<ValidationOutcome> {
  let unavailable = false;
  for (const url of settings.urls) {
    const answer = await ask(deps, url, token, settings.timeoutMs);
    if (answer.kind === 'valid') return 'valid';
    if (answer.kind === 'unavailable') {
      unavailable = true;
      // The schema admits no user info or query in these URLs: they are safe to log as they are.
      deps.logger.warn('api key validator unavailable', { url, reason: answer.reason });
    }
  }
  return unavailable ? 'unavailable' : 'invalid';
}
