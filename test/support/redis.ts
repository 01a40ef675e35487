/**
 * The real Redis the store tests run against (127.0.0.1:6379, started by .ci/run): `useRedis()`
 * fails the suite with a clear message when it is not answering, gives each test its own key
 * prefix, closes the stores a test made and deletes its keys afterwards. `recordingSubscriber()`
 * records what a subscription delivers.
 */
import { createConnection } from 'node:net';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import {
  createRedisStore,
  type RedisStore,
  type RedisStoreOptions,
} from '../../src/adapters/redis/redis-store.ts';
import type { SharedEventBatch, SharedSubscriber } from '../../src/core/contracts/shared-store.ts';

export const REDIS_HOST = '127.0.0.1';
export const REDIS_PORT = 6379;
export const REDIS_URL = `redis://${REDIS_HOST}:${REDIS_PORT}/0`;

const NOT_ANSWERING = `Redis is not answering on ${REDIS_HOST}:${REDIS_PORT}: start redis-server (.ci/run starts one)`;

/** Resolves when Redis answers PING within a second; otherwise rejects with how to start one. */
export function requireRedis(): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const socket = createConnection(REDIS_PORT, REDIS_HOST);
    const fail = (why: string): void => {
      socket.destroy();
      reject(new Error(`${NOT_ANSWERING} (${why})`));
    };
    const timer = setTimeout(() => fail('no answer within 1 s'), 1000);
    let reply = '';
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (!reply.includes('\r\n')) return;
      clearTimeout(timer);
      socket.destroy();
      if (reply.startsWith('+PONG')) resolve();
      else reject(new Error(`${NOT_ANSWERING} (it answered ${JSON.stringify(reply.trim())})`));
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      fail(err.message);
    });
  });
}

export type AdminClient = ReturnType<typeof createClient>;

export interface RedisFixture {
  /** The current test's key prefix. */
  prefix(): string;
  /** A store under the current test's prefix (closed after the test); options override. */
  store(options?: Partial<RedisStoreOptions>): Promise<RedisStore>;
  /** A plain client on the real Redis, for checks the store does not offer. */
  admin(): AdminClient;
}

let sequence = 0;

/** Registers the hooks of a suite that uses the real Redis. */
export function useRedis(): RedisFixture {
  let admin: AdminClient | undefined;
  let prefix = '';
  const stores: RedisStore[] = [];

  beforeAll(async () => {
    await requireRedis();
    admin = createClient({ url: REDIS_URL });
    admin.on('error', () => {});
    await admin.connect();
  });
  beforeEach(() => {
    prefix = `test:${process.pid}:${Date.now().toString(36)}:${++sequence}:`;
  });
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
    if (!admin) return;
    for await (const batch of admin.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
      const keys = Array.isArray(batch) ? batch : [batch];
      if (keys.length > 0) await admin.unlink(keys);
    }
  });
  afterAll(() => {
    admin?.destroy();
  });

  return {
    prefix: () => prefix,
    store: async (options = {}) => {
      const store = await createRedisStore({ url: REDIS_URL, keyPrefix: prefix, ...options });
      stores.push(store);
      return store;
    },
    admin: () => {
      if (!admin) throw new Error('useRedis: the admin client is not connected yet');
      return admin;
    },
  };
}

/** A subscriber that records what it is told. */
export function recordingSubscriber() {
  const batches: SharedEventBatch[] = [];
  const connection: boolean[] = [];
  let gaps = 0;
  const subscriber: SharedSubscriber = {
    onEvents: (batch) => batches.push(batch),
    onGap: () => {
      gaps++;
    },
    onConnection: (up) => connection.push(up),
  };
  return { subscriber, batches, connection, gaps: () => gaps };
}
