/**
 * A subscription to the events stream on its own connection (a duplicate of the store's): a loop
 * of `XREAD BLOCK` from the last id seen, delivering other replicas' batches in stream order.
 *
 * - It starts at the stream's newest id when the connection is first up, then calls `onGap()` once
 *   (whatever happened before the subscription must be read from the registry and verdicts).
 * - When the connection drops it reports `onConnection(false)`; once back, `onConnection(true)`,
 *   then it continues after the last id seen, unless entries after it were trimmed meanwhile:
 *   then `onGap()` and it continues from the newest.
 * - A read that stays unanswered past the block time plus the command timeout (a stalled server)
 *   also reports `onConnection(false)`; the read is not abandoned (its answer would be lost), and
 *   when it answers `onConnection(true)` follows.
 * - `stop()` ends the loop and destroys the connection (a pending XREAD is cut, not awaited).
 */
import type { SharedSubscriber, SharedSubscription } from '../../core/contracts/shared-store.ts';
import { describe, type RedisClient, RedisConnection, type StoreLogger } from './redis-connection.ts';
import { decodeBatch, type StreamEntry, streamPosition } from './redis-stream.ts';

export interface SubscriptionOptions {
  /** A client of its own (not connected yet), duplicated from the store's. */
  client: RedisClient;
  displayUrl: string;
  key: string;
  replicaId: string;
  blockMs: number;
  commandTimeoutMs: number;
  /** Pause after an error that is not a lost connection (so a bad reply never spins the loop). */
  retryMs: number;
  logger?: StoreLogger;
}

/** Entries read per XREAD at most (the loop reads again at once when there are more). */
const READ_COUNT = 500;

export class StreamSubscription implements SharedSubscription {
  private stopped = false;
  /** The last id seen; undefined until the start position is known. */
  private lastId: string | undefined;
  /** Undefined until the first connection is up or has failed. */
  private connected: boolean | undefined;
  private readonly connection: RedisConnection;

  constructor(
    private readonly options: SubscriptionOptions,
    private readonly subscriber: SharedSubscriber,
  ) {
    this.connection = new RedisConnection(
      options.client,
      options.displayUrl,
      options.commandTimeoutMs,
      (up) => this.setConnected(up),
    );
    void this.loop();
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.connection.destroy();
  }

  /** Reports a drop (also a first connection that fails) and a recovery, each once. */
  private setConnected(up: boolean): void {
    if (this.stopped) return;
    const was = this.connected;
    this.connected = up;
    if (up ? was === false : was !== false) this.call(() => this.subscriber.onConnection?.(up));
  }

  /** Runs a subscriber callback; its exceptions are logged, never end the loop. */
  private call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.options.logger?.warn('state store subscriber failed', { error: describe(err) });
    }
  }

  private async loop(): Promise<void> {
    let resync = true;
    while (!this.stopped) {
      if (!this.connection.isReady) {
        if (!(await this.connection.ready())) return;
        resync = true;
      }
      try {
        if (resync) {
          await this.position();
          resync = false;
        }
        this.deliver(await this.read());
      } catch (err) {
        if (this.stopped) return;
        if (this.connection.isReady) {
          // The connection is fine but the command failed (e.g. a wrong key type): pause, retry.
          this.options.logger?.warn('state store events read failed', { error: describe(err) });
          await new Promise((resolve) => setTimeout(resolve, this.options.retryMs));
        }
        resync = true;
      }
    }
  }

  /** Fixes where to read from: the newest id at first, after a gap; the last seen id otherwise. */
  private async position(): Promise<void> {
    const { client } = this.connection;
    const starting = this.lastId === undefined;
    const at = await this.watched(streamPosition(client, this.options.key, this.lastId ?? '0-0'), 0);
    if (this.stopped) return;
    if (starting || at.trimmedAfter) {
      this.lastId = at.last;
      this.call(() => this.subscriber.onGap());
    }
  }

  private async read(): Promise<StreamEntry[]> {
    const { key, blockMs } = this.options;
    const id = this.lastId ?? '$';
    const pending = this.connection.client.xRead({ key, id }, { BLOCK: blockMs, COUNT: READ_COUNT });
    const reply = (await this.watched(pending, blockMs)) as Array<{ messages: StreamEntry[] }> | null;
    return reply?.[0]?.messages ?? [];
  }

  /**
   * Awaits a command; one unanswered `waitMs` past the command timeout reports the connection
   * down meanwhile (it is still awaited: abandoning it would lose its answer), an answer reports it up.
   */
  private async watched<T>(pending: Promise<T>, waitMs: number): Promise<T> {
    const stall = setTimeout(() => this.setConnected(false), waitMs + this.options.commandTimeoutMs);
    try {
      const value = await pending;
      this.setConnected(true);
      return value;
    } finally {
      clearTimeout(stall);
    }
  }

  private deliver(entries: StreamEntry[]): void {
    for (const entry of entries) {
      if (this.stopped) return;
      this.lastId = entry.id;
      const batch = decodeBatch(entry);
      if (batch === null || batch.from === this.options.replicaId) continue;
      this.call(() => this.subscriber.onEvents(batch));
    }
  }
}
