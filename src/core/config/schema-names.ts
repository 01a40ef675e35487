/**
 * The names and field groups the config schema is built from: policy names and their aliases, log
 * levels, connectors, and the retry and breaker fields a worker may override through the admin API.
 */
import { bool, int, num, positive } from './schema-parts.ts';

export const POLICY_NAMES = [
  'random',
  'round_robin',
  'power_of_two',
  'consistent_hash',
  'rendezvous_hash',
  'cache_aware',
  'least_loaded',
  'sticky_least_loaded',
] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];
/** Spellings other routers use for one of our policies (SMG says `consistent_hashing`). */
export const POLICY_ALIASES: Readonly<Record<string, PolicyName>> = { consistent_hashing: 'consistent_hash' };

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** production-stack and the Python launchers spell these the Python way. */
export const LOG_LEVEL_ALIASES: Readonly<Record<string, LogLevel>> = { warning: 'warn', critical: 'error' };

export const KV_CONNECTORS = ['nixl', 'mooncake', 'p2p_nccl'] as const;
export const DISCOVERY_MODES = ['static', 'k8s'] as const;

export const DEFAULT_REQUEST_ID_HEADERS = ['x-request-id', 'x-correlation-id', 'x-trace-id', 'request-id'];

// ---------------------------------------------------------------------------------------------

/** The retry settings a worker may override (admin API), with their ranges and defaults. */
export const retryFields = {
  maxRetries: int(1).default(5),
  initialBackoffMs: num(0).default(50),
  maxBackoffMs: num(0).default(30_000),
  backoffMultiplier: num(1).default(1.5),
  jitterFactor: num(0, 1).default(0.2),
  disabled: bool().default(false),
};

/** The circuit-breaker settings a worker may override (admin API), with their ranges and defaults. */
export const breakerFields = {
  failureThreshold: int(1).default(10),
  successThreshold: int(1).default(3),
  timeoutDurationSecs: positive().default(60),
  windowDurationSecs: positive().default(120),
  disabled: bool().default(false),
};
