/**
 * One node-redis connection as the shared store needs it: commands fail at once while the
 * connection is down (no offline queue) and time out after `commandTimeoutMs` when Redis is slow;
 * the client reconnects in the background (backoff capped at about 1 s); 'error' events are always
 * handled, and the connection's state changes (not every failed command) reach `onState`.
 */
import { createClient } from 'redis';
import type { RedisTarget } from './redis-url.ts';

export type RedisClient = ReturnType<typeof createClient>;

export interface StoreLogger {
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/** What every failed store operation rejects with (the cause, when there is one, is kept). */
export class StateStoreError extends Error {
  override readonly name = 'StateStoreError';
}

export const MAX_RECONNECT_DELAY_MS = 1000;

/** Delay before reconnection attempt `retries` (0 first): 50 ms doubling, capped near 1 s, jittered. */
export function reconnectDelay(retries: number, random: () => number = Math.random): number {
  const base = Math.min(50 * 2 ** Math.min(retries, 10), MAX_RECONNECT_DELAY_MS);
  return Math.round(base * (0.8 + 0.2 * random()));
}

export function createRedisClient(target: RedisTarget, connectTimeoutMs: number, name?: string): RedisClient {
  const common = {
    host: target.host,
    port: target.port,
    connectTimeout: connectTimeoutMs,
    reconnectStrategy: (retries: number) => reconnectDelay(retries),
  };
  return createClient({
    socket: target.tls ? { ...common, tls: true, servername: target.host } : common,
    database: target.database,
    disableOfflineQueue: true,
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
    ...(name !== undefined ? { name } : {}),
  });
}

export type ConnectionState = 'connecting' | 'up' | 'down';

export class RedisConnection {
  private current: ConnectionState = 'connecting';
  private closed = false;
  private readonly firstSettled: Promise<void>;

  constructor(
    readonly client: RedisClient,
    private readonly displayUrl: string,
    private readonly commandTimeoutMs: number,
    /** Called on each change: down (with the error) or up again; not on the first connection. */
    onState?: (up: boolean, error?: Error) => void,
  ) {
    let settle = (): void => {};
    this.firstSettled = new Promise<void>((resolve) => {
      settle = resolve;
    });
    client.on('error', (error: Error) => {
      settle();
      if (this.closed || this.current === 'down') return;
      this.current = 'down';
      onState?.(false, error);
    });
    client.on('ready', () => {
      settle();
      const was = this.current;
      this.current = 'up';
      if (was === 'down' && !this.closed) onState?.(true);
    });
    // Resolves on the first ready; rejects only when closed before that (nothing to report then).
    client.connect().catch(() => {});
  }

  /** `connecting` until the first connection is up or has failed. */
  get state(): ConnectionState {
    return this.current;
  }

  get isReady(): boolean {
    return !this.closed && this.client.isReady;
  }

  /** Resolves when the first attempt has connected or failed, or after `ms` (a server that never answers). */
  async settled(ms: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
    await Promise.race([this.firstSettled, bound]);
    clearTimeout(timer);
  }

  /** Waits until the connection is ready, or `false` once closed. */
  ready(): Promise<boolean> {
    if (this.isReady) return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const done = (): void => {
        this.client.off('ready', done);
        this.client.off('end', done);
        resolve(this.isReady);
      };
      this.client.on('ready', done);
      this.client.on('end', done);
    });
  }

  error(message: string, cause?: unknown): StateStoreError {
    return new StateStoreError(
      `state store ${this.displayUrl}: ${message}`,
      cause === undefined ? {} : { cause },
    );
  }

  /**
   * Runs `fn` on the client: rejects at once when the connection is down or closed, and after
   * `timeoutMs` without an answer. A late answer to a timed-out command is dropped.
   */
  run<T>(fn: (client: RedisClient) => Promise<T>, timeoutMs = this.commandTimeoutMs): Promise<T> {
    if (this.closed) return Promise.reject(this.error('closed'));
    if (!this.client.isReady) return Promise.reject(this.error('not connected'));
    let pending: Promise<T>;
    try {
      pending = fn(this.client);
    } catch (err) {
      return Promise.reject(this.error(describe(err), err));
    }
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(this.error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      pending.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(this.error(describe(err), err));
        },
      );
    });
  }

  /** Closes gracefully (pending answers first, for at most the command timeout), then for good. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.client.isReady) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.commandTimeoutMs);
      });
      const graceful = Promise.resolve()
        .then(() => this.client.close())
        .catch(() => {});
      await Promise.race([graceful, bound]);
      clearTimeout(timer);
    }
    this.client.destroy();
  }

  /** Closes at once: pending commands are rejected, not awaited. */
  destroy(): void {
    this.closed = true;
    this.client.destroy();
  }
}

export function describe(err: unknown): string {
  return err instanceof Error ? err.message || err.name : String(err);
}
