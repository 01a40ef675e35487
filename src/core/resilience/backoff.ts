/**
 * Retry settings and the backoff schedule. Settings only come out of the config schema, so an
 * invalid combination (jitter outside 0..1, multiplier below 1, initial above max, fractional or
 * zero attempts) cannot be constructed, from flags or from code.
 */
import { parseRouterConfig, type RouterConfig } from '../config/schema.ts';
import type { Random } from '../contracts/runtime.ts';

export type RetrySettings = Readonly<RouterConfig['retry']>;

/** Validates retry settings given in code (same rules and messages as the flags). */
export function retrySettings(raw: Partial<RouterConfig['retry']>): RetrySettings {
  return parseRouterConfig({ retry: raw }).retry;
}

/** Upstream attempts a request may make, the first included. */
export function maxAttempts(settings: RetrySettings): number {
  return settings.disabled ? 1 : settings.maxRetries;
}

/** The delay before retry `n` (n = 0 before the first retry): capped, then jittered. */
export function backoffDelayMs(settings: RetrySettings, n: number, random: Random): number {
  const base = Math.min(settings.initialBackoffMs * settings.backoffMultiplier ** n, settings.maxBackoffMs);
  const jitter = settings.jitterFactor * (2 * random() - 1);
  return base * (1 + jitter);
}

/**
 * `Retry-After` as milliseconds from `now`: delta-seconds or an HTTP date. Undefined when absent
 * or unparseable; never negative.
 */
export function retryAfterMs(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  if (!/^[A-Za-z]{3}/.test(trimmed)) return undefined; // every HTTP-date form starts with the weekday
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
