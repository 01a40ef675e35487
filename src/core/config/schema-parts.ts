/**
 * The building blocks of the config schema.
 * Each carries one message that states the whole constraint, so a wrong type, a
 * fraction and an out-of-range value all get the same actionable answer.
 */
import { z } from 'zod';
import { ipBits, isHostPattern } from './host-patterns.ts';

export function int(min: number, max?: number) {
  const error =
    max === undefined ? `must be an integer >= ${min}` : `must be an integer between ${min} and ${max}`;
  const base = z.number({ error }).int({ error }).min(min, { error });
  return max === undefined ? base : base.max(max, { error });
}

export function num(min: number, max?: number) {
  const error = max === undefined ? `must be a number >= ${min}` : `must be between ${min} and ${max}`;
  const base = z.number({ error }).min(min, { error });
  return max === undefined ? base : base.max(max, { error });
}

/** A duration or interval in seconds: any number above zero (fractions allowed). */
export function positive() {
  const error = 'must be a number > 0';
  return z.number({ error }).gt(0, { error });
}

export const port = () => int(0, 65535);
export const bool = () => z.boolean({ error: 'must be true or false' });

export function text(what: string) {
  const error = `must be a non-empty ${what}`;
  return z.string({ error }).trim().min(1, { error });
}

export function oneOf<const T extends readonly [string, ...string[]]>(
  values: T,
  aliases: Record<string, T[number]> = {},
) {
  const names = Object.keys(aliases);
  const listed = values.join(', ') + (names.length > 0 ? ` (alias: ${names.join(', ')})` : '');
  const error = `must be one of ${listed}`;
  return z
    .enum([...values, ...names] as [string, ...string[]], { error })
    .transform((v): T[number] => aliases[v] ?? (v as T[number]));
}

export function list<T extends z.ZodType>(item: T, what: string) {
  return z.array(item, { error: `must be a list of ${what}` });
}

export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    const webScheme = url.protocol === 'http:' || url.protocol === 'https:';
    const noCredentials = url.username === '' && url.password === '';
    return webScheme && url.hostname !== '' && noCredentials && !/[?#]/.test(value);
  } catch {
    return false;
  }
}
const URL_ERROR = 'must be an http:// or https:// URL (no user:password@, query or fragment)';
/** A worker or service base URL; a trailing slash is removed so paths can be appended. */
export const httpUrl = z
  .string({ error: URL_ERROR })
  .trim()
  .refine(isHttpUrl, { error: URL_ERROR })
  .transform((url) => url.replace(/\/+$/, ''));

const STORE_URL_ERROR = 'must be a redis:// or rediss:// URL (redis://host:port/db)';
/** A shared state store (Redis or Valkey): redis://host:port/db, rediss:// for TLS. */
export const storeUrl = z
  .string({ error: STORE_URL_ERROR })
  .trim()
  .refine(
    (value) => {
      try {
        const url = new URL(value);
        return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
      } catch {
        return false;
      }
    },
    { error: STORE_URL_ERROR },
  );

/** --state-store and its settings (schema.ts `stateStore`). */
export const stateStoreFields = {
  // Unset: each replica keeps its state in memory.
  url: storeUrl.optional(),
  // From VLLM_ROUTER_STATE_STORE_PASSWORD only (never the command line).
  password: text('password').optional(),
  timeoutMs: int(1).default(250),
  // Replicas of one fleet share it; fleets sharing one Redis database need their own.
  keyPrefix: text('key prefix').default('vllm-router:'),
};

const HEADER_ERROR = 'must be an HTTP header name';
/** A header name, lowercased (Headers lookups are case-insensitive; comparisons here are not). */
export const headerName = z
  .string({ error: HEADER_ERROR })
  .trim()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { error: HEADER_ERROR })
  .transform((h) => h.toLowerCase());

const SELECTOR_ERROR = 'must be a key=value label selector';
export const selector = z.string({ error: SELECTOR_ERROR }).regex(/^[^=\s]+=\S*$/, { error: SELECTOR_ERROR });

const HOST_PATTERN_ERROR = 'must be a host name, *.domain, IP address or CIDR block';
export const hostPattern = z
  .string({ error: HOST_PATTERN_ERROR })
  .trim()
  .refine(isHostPattern, { error: HOST_PATTERN_ERROR });

const ADDRESS_BLOCK_ERROR = 'must be an IP address or a CIDR block';
export const addressBlock = z
  .string({ error: ADDRESS_BLOCK_ERROR })
  .trim()
  .refine((p) => isHostPattern(p) && ipBits(p.split('/')[0] as string) !== undefined, {
    error: ADDRESS_BLOCK_ERROR,
  });

const HOST_PORT_ERROR = 'must be HOST:PORT with a port between 0 and 65535';
export const hostPort = z
  .string({ error: HOST_PORT_ERROR })
  .trim()
  .refine((v) => /^[^\s/@]+:\d+$/.test(v) && URL.canParse(`http://${v}`), { error: HOST_PORT_ERROR });

export const statusCodes = list(int(100, 599), 'HTTP status codes');

/** A config section: unknown keys are errors (a typo in a config file must not pass silently). */
export function section<T extends z.core.$ZodLooseShape>(shape: T) {
  // Every field of a section has a default or is optional, so `{}` is a valid input.
  return z.strictObject(shape).prefault({} as never);
}
