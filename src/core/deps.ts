/**
 * What the core needs from its host, injected by each adapter (and by tests):
 * time, randomness, the upstream HTTP transport, logging and metrics.
 */
import type { FleetApi } from './fleet/fleet-api.ts';
import type { Logger } from './observability/logger.ts';
import type { MetricsRegistry } from './observability/metrics.ts';

export interface Clock {
  /** Milliseconds since the epoch (wall clock, used for timestamps and expiry). */
  now(): number;
  /** Monotonic milliseconds, used for durations. */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export type TimerHandle = unknown;

/** Returns a float in [0, 1). */
export type Random = () => number;

/** A request to an engine. Headers are a plain object (lowercase names): cheaper than `Headers`. */
export interface UpstreamRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: Uint8Array | ReadableStream<Uint8Array> | null;
  signal: AbortSignal;
}

/**
 * An engine's answer. `body` is either the whole body (transports may buffer small bodies that
 * announced a content-length) or a stream delivering chunks as they arrive.
 */
export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: Uint8Array | ReadableStream<Uint8Array> | null;
}

/** The upstream transport: fetch-shaped, so any runtime's HTTP client fits behind it. */
export type Upstream = (req: UpstreamRequest) => Promise<UpstreamResponse>;

export interface RouterDeps {
  clock: Clock;
  random: Random;
  upstream: Upstream;
  fleet: FleetApi;
  logger: Logger;
  metrics: MetricsRegistry;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export const systemRandom: Random = Math.random;
