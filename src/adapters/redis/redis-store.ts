/**
 * SharedStore on Redis or Valkey 7+ (`--state-store redis://host:port/db`, `rediss://` for TLS),
 * through the official node-redis client; runs on Node and on Deno. Key layout: redis-keys.ts.
 *
 * Every method rejects with a StateStoreError at once while Redis is unreachable and after
 * `commandTimeoutMs` (250) when it does not answer; the client keeps reconnecting meanwhile and
 * one warning is logged per change of the connection's state. Sessions are claimed with
 * HSETNX + HGET in one MULTI, so two replicas placing a new session agree on its owner. Each
 * replica's load lives in its own expiring hash, so a replica that dies stops counting after
 * its TTL. Events go through one stream (one XADD per publish), read by a subscription on a
 * connection of its own (redis-subscription.ts).
 */
import type {
  SharedEvent,
  SharedEventBatch,
  SharedStore,
  SharedSubscriber,
  SharedSubscription,
  SharedVerdict,
  SharedWorker,
} from '../../core/contracts/shared-store.ts';
import {
  createRedisClient,
  type RedisClient,
  RedisConnection,
  StateStoreError,
  type StoreLogger,
} from './redis-connection.ts';
import { DEFAULT_KEY_PREFIX, type StoreKeys, storeKeys } from './redis-keys.ts';
import { DROP_EXPIRED_REPLICAS, PUT_VERDICT } from './redis-scripts.ts';
import { decodeBatch, encodeBatch, STREAM_MAX_LENGTH, type StreamEntry } from './redis-stream.ts';
import { StreamSubscription } from './redis-subscription.ts';
import { parseRedisUrl, type RedisTarget } from './redis-url.ts';

export { StateStoreError } from './redis-connection.ts';
export { parseRedisUrl } from './redis-url.ts';

export interface RedisStoreOptions {
  /** `redis://host:port/db` or `rediss://host:port/db`. */
  url: string;
  /** Overrides a password in the URL (from VLLM_ROUTER_STATE_STORE_PASSWORD). */
  password?: string;
  /** Prefix of every key (default `vllm-router:`); replicas sharing a fleet share it. */
  keyPrefix?: string;
  /** This replica's id (default: a random UUID). */
  replicaId?: string;
  /** A command without an answer after this long rejects (default 250 ms). */
  commandTimeoutMs?: number;
  /** TCP (and TLS) connect timeout, and how long the factory waits for the first connection (2000 ms). */
  connectTimeoutMs?: number;
  /** How long one XREAD of a subscription blocks (1000 ms). */
  blockMs?: number;
  logger?: StoreLogger;
}

const DEFAULT_COMMAND_TIMEOUT_MS = 250;
const DEFAULT_CONNECT_TIMEOUT_MS = 2000;
const DEFAULT_BLOCK_MS = 1000;

/**
 * Connects to the store: resolves once the first connection is up, has failed, or has not answered
 * within `connectTimeoutMs` (the store then works as soon as Redis does). Throws (an Error naming
 * `--state-store`) only for an unusable URL.
 */
export async function createRedisStore(options: RedisStoreOptions): Promise<RedisStore> {
  const store = new RedisStore(parseRedisUrl(options.url, options.password), options);
  await store.started();
  return store;
}

function parseEntries<T>(raw: Record<string, string>, valid: (v: unknown) => v is T): Map<string, T> {
  const out = new Map<string, T>();
  for (const [field, text] of Object.entries(raw)) {
    try {
      const value: unknown = JSON.parse(text);
      if (valid(value)) out.set(field, value);
    } catch {
      // An entry that is not ours (or corrupt) is skipped; the next write replaces it.
    }
  }
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
const isWorker = (v: unknown): v is SharedWorker =>
  isObject(v) && typeof v.id === 'string' && isObject(v.spec);
const isVerdict = (v: unknown): v is SharedVerdict => isObject(v) && typeof v.at === 'number';

export class RedisStore implements SharedStore {
  readonly replicaId: string;
  readonly displayUrl: string;
  private readonly keys: StoreKeys;
  private readonly connection: RedisConnection;
  private readonly subscriptions = new Set<StreamSubscription>();
  private readonly commandTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private closed = false;

  constructor(
    target: RedisTarget,
    private readonly options: RedisStoreOptions,
  ) {
    this.replicaId = options.replicaId ?? crypto.randomUUID();
    this.displayUrl = target.displayUrl;
    this.keys = storeKeys(options.keyPrefix ?? DEFAULT_KEY_PREFIX);
    this.commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    // CLIENT SETNAME refuses spaces: the name shows the replica in CLIENT LIST.
    const name = `vllm-router-${this.replicaId.replace(/[^\w.:-]/g, '_')}`;
    const client = createRedisClient(target, this.connectTimeoutMs, name);
    const url = this.displayUrl;
    this.connection = new RedisConnection(client, url, this.commandTimeoutMs, (up, error) => {
      if (up) options.logger?.warn('state store reachable again', { url });
      else
        options.logger?.warn('state store unreachable: routing on local state', {
          url,
          error: error?.message,
        });
    });
  }

  /** @internal The first connection's outcome (createRedisStore awaits it). */
  async started(): Promise<void> {
    await this.connection.settled(this.connectTimeoutMs);
    if (this.connection.state === 'connecting') {
      this.options.logger?.warn('state store not answering: routing on local state', {
        url: this.displayUrl,
        waitedMs: this.connectTimeoutMs,
      });
    }
  }

  /** Whether the store's connection is up now (for /health). */
  get connected(): boolean {
    return this.connection.isReady;
  }

  private run<T>(fn: (client: RedisClient) => Promise<T>): Promise<T> {
    return this.connection.run(fn);
  }

  // Registry.

  async readRegistry(): Promise<SharedWorker[]> {
    const raw = await this.run((c) => c.hGetAll(this.keys.registry));
    const workers = [...parseEntries(raw, isWorker).values()];
    return workers.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  async putWorker(worker: SharedWorker, onlyIfAbsent = false): Promise<boolean> {
    const json = JSON.stringify(worker);
    if (onlyIfAbsent) return (await this.run((c) => c.hSetNX(this.keys.registry, worker.id, json))) === 1;
    await this.run((c) => c.hSet(this.keys.registry, worker.id, json));
    return true;
  }

  async deleteWorker(id: string): Promise<void> {
    await this.run((c) => c.hDel(this.keys.registry, id));
  }

  // Verdicts.

  async readConfigured(): Promise<string[] | undefined> {
    const raw = await this.run((c) => c.get(this.keys.configured));
    const ids: unknown = raw === null ? undefined : JSON.parse(raw);
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : undefined;
  }

  async writeConfigured(ids: readonly string[]): Promise<void> {
    await this.run((c) => c.set(this.keys.configured, JSON.stringify(ids)));
  }

  async readVerdicts(): Promise<Record<string, SharedVerdict>> {
    const raw = await this.run((c) => c.hGetAll(this.keys.verdicts));
    return Object.fromEntries(parseEntries(raw, isVerdict));
  }

  async putVerdict(workerId: string, verdict: SharedVerdict): Promise<void> {
    const args = [workerId, JSON.stringify(verdict), String(verdict.at)];
    await this.run((c) => c.eval(PUT_VERDICT, { keys: [this.keys.verdicts], arguments: args }));
  }

  // Sticky sessions.

  async sessionOwner(pool: string, sessionId: string): Promise<string | undefined> {
    return (await this.run((c) => c.hGet(this.keys.session(sessionId), pool))) ?? undefined;
  }

  async claimSession(pool: string, sessionId: string, workerId: string, ttlMs: number): Promise<string> {
    const key = this.keys.session(sessionId);
    const replies = await this.run((c) =>
      c.multi().hSetNX(key, pool, workerId).hGet(key, pool).pExpire(key, ttlMs).exec(),
    );
    const owner = replies[1];
    if (typeof owner !== 'string') throw new StateStoreError(`state store ${this.displayUrl}: claim lost`);
    return owner;
  }

  async moveSession(pool: string, sessionId: string, workerId: string, ttlMs: number): Promise<void> {
    const key = this.keys.session(sessionId);
    await this.run((c) => c.multi().hSet(key, pool, workerId).pExpire(key, ttlMs).exec());
  }

  async touchSessions(sessionIds: readonly string[], ttlMs: number): Promise<void> {
    if (sessionIds.length === 0) return;
    await this.run((c) => Promise.all(sessionIds.map((id) => c.pExpire(this.keys.session(id), ttlMs))));
  }

  async finishSession(sessionId: string): Promise<void> {
    await this.run((c) => c.del(this.keys.session(sessionId)));
  }

  // Load.

  async reportLoad(load: Record<string, number>, ttlMs: number): Promise<void> {
    const key = this.keys.load(this.replicaId);
    const counts: Record<string, string> = {};
    for (const [workerId, n] of Object.entries(load)) if (n > 0) counts[workerId] = String(n);
    await this.run((c) => {
      const tx = c.multi().del(key);
      if (Object.keys(counts).length > 0) tx.hSet(key, counts).pExpire(key, ttlMs);
      return tx.zAdd(this.keys.replicas, { score: Date.now(), value: this.replicaId }).exec();
    });
  }

  async readRemoteLoad(): Promise<Record<string, number>> {
    return this.run(async (c) => {
      const others = (await c.zRange(this.keys.replicas, 0, -1)).filter((id) => id !== this.replicaId);
      const loads = await Promise.all(others.map((id) => c.hGetAll(this.keys.load(id))));
      const sum: Record<string, number> = {};
      const expired: string[] = [];
      loads.forEach((load, i) => {
        const entries = Object.entries(load);
        if (entries.length === 0) expired.push(others[i] as string);
        for (const [workerId, n] of entries) sum[workerId] = (sum[workerId] ?? 0) + (Number(n) || 0);
      });
      if (expired.length > 0) {
        const keys = [this.keys.replicas, ...expired.map((id) => this.keys.load(id))];
        await c.eval(DROP_EXPIRED_REPLICAS, { keys, arguments: expired });
      }
      return sum;
    });
  }

  // Events.

  async publish(events: readonly SharedEvent[]): Promise<void> {
    if (events.length === 0) return;
    const trim = { strategy: 'MAXLEN', strategyModifier: '~', threshold: STREAM_MAX_LENGTH } as const;
    await this.run((c) => c.xAdd(this.keys.events, '*', encodeBatch(this.replicaId, events), { TRIM: trim }));
  }

  subscribe(subscriber: SharedSubscriber): SharedSubscription {
    if (this.closed) return { stop() {} };
    const subscription = new StreamSubscription(
      {
        client: this.connection.client.duplicate(),
        displayUrl: this.displayUrl,
        key: this.keys.events,
        replicaId: this.replicaId,
        blockMs: this.options.blockMs ?? DEFAULT_BLOCK_MS,
        commandTimeoutMs: this.commandTimeoutMs,
        retryMs: 1000,
        ...(this.options.logger ? { logger: this.options.logger } : {}),
      },
      subscriber,
    );
    this.subscriptions.add(subscription);
    return {
      stop: () => {
        this.subscriptions.delete(subscription);
        subscription.stop();
      },
    };
  }

  async recentEvents(limit: number): Promise<SharedEventBatch[]> {
    if (limit <= 0) return [];
    const entries = await this.run((c) => c.xRevRange(this.keys.events, '+', '-', { COUNT: limit }));
    return ((entries ?? []) as StreamEntry[])
      .reverse()
      .map(decodeBatch)
      .filter((batch): batch is SharedEventBatch => batch !== null);
  }

  async ping(): Promise<number> {
    const started = performance.now();
    await this.run((c) => c.ping());
    return performance.now() - started;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const subscription of this.subscriptions) subscription.stop();
    this.subscriptions.clear();
    await this.connection.close();
  }
}
