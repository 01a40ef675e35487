/**
 * The Redis SharedStore against a real Redis (127.0.0.1:6379): every method, with two or three
 * stores playing replicas of one fleet. Failure behaviour: redis-resilience.test.ts.
 */
import { describe, expect, it, vi } from 'vitest';
import { createRedisStore, parseRedisUrl } from '../../src/adapters/redis/redis-store.ts';
import type { SharedEvent, SharedWorker } from '../../src/core/contracts/shared-store.ts';
import { recordingSubscriber, useRedis } from '../support/redis.ts';

const redis = useRedis();
const WAIT = { timeout: 5000, interval: 20 };

function worker(id: string, url = `http://10.0.0.1:${id.length}000`): SharedWorker {
  return { id, spec: { url }, models: null, modelsStatic: false, draining: false };
}

describe('registry', () => {
  it('puts, reads, writes only if absent when asked, deletes', async () => {
    const a = await redis.store();
    const b = await redis.store();
    expect(await a.readRegistry()).toEqual([]);
    expect(await a.putWorker(worker('w2'))).toBe(true);
    expect(await b.putWorker(worker('w1'))).toBe(true);
    expect(await b.readRegistry()).toEqual([worker('w1'), worker('w2')]);

    const changed = { ...worker('w1', 'http://10.0.0.9:8000'), draining: true };
    expect(await a.putWorker(changed, true)).toBe(false);
    expect((await a.readRegistry())[0]).toEqual(worker('w1'));
    expect(await a.putWorker(changed)).toBe(true);
    expect((await b.readRegistry())[0]).toEqual(changed);

    await b.deleteWorker('w1');
    expect(await a.readRegistry()).toEqual([worker('w2')]);
    expect(await a.putWorker(worker('w1'), true)).toBe(true);
  });
});

describe('verdicts', () => {
  it('keeps one verdict per worker, the newest observation winning', async () => {
    const a = await redis.store();
    const b = await redis.store();
    await a.putVerdict('w1', { healthy: false, circuit: { state: 'open', openedAt: 100 }, at: 100 });
    await b.putVerdict('w2', { healthy: true, at: 50 });
    await b.putVerdict('w1', { healthy: true, at: 90 });
    expect(await b.readVerdicts()).toEqual({
      w1: { healthy: false, circuit: { state: 'open', openedAt: 100 }, at: 100 },
      w2: { healthy: true, at: 50 },
    });
    await b.putVerdict('w1', { healthy: true, circuit: { state: 'closed' }, at: 120 });
    expect((await a.readVerdicts()).w1).toEqual({ healthy: true, circuit: { state: 'closed' }, at: 120 });
  });
});

describe('sticky sessions', () => {
  it('two replicas claiming the same new sessions at once agree on every owner', async () => {
    const a = await redis.store();
    const b = await redis.store();
    const ids = Array.from({ length: 20 }, (_, i) => `s${i}`);
    const owners = await Promise.all([
      ...ids.map((id) => a.claimSession('decode:m', id, `a-${id}`, 60_000)),
      ...ids.map((id) => b.claimSession('decode:m', id, `b-${id}`, 60_000)),
    ]);
    for (const [i, id] of ids.entries()) {
      expect(owners[i]).toBe(owners[i + ids.length]);
      expect([`a-${id}`, `b-${id}`]).toContain(owners[i]);
      expect(await b.sessionOwner('decode:m', id)).toBe(owners[i]);
    }
  });

  it('keeps a session per pool; move overwrites; finish forgets every pool', async () => {
    const a = await redis.store();
    const b = await redis.store();
    expect(await a.sessionOwner('decode:m', 's')).toBeUndefined();
    expect(await a.claimSession('decode:m', 's', 'w1', 60_000)).toBe('w1');
    expect(await b.claimSession('prefill:m', 's', 'p1', 60_000)).toBe('p1');
    expect(await b.claimSession('decode:m', 's', 'w2', 60_000)).toBe('w1');
    await b.moveSession('decode:m', 's', 'w3', 60_000);
    expect(await a.sessionOwner('decode:m', 's')).toBe('w3');
    expect(await a.sessionOwner('prefill:m', 's')).toBe('p1');
    await a.finishSession('s');
    expect(await b.sessionOwner('decode:m', 's')).toBeUndefined();
    expect(await b.sessionOwner('prefill:m', 's')).toBeUndefined();
  });

  it('forgets a session left untouched for its TTL; a touch pushes the expiry', async () => {
    const a = await redis.store();
    await a.claimSession('decode:m', 'short', 'w1', 200);
    await a.claimSession('decode:m', 'touched', 'w1', 200);
    await a.touchSessions(['touched', 'absent'], 60_000);
    expect(await redis.admin().pTTL(`${redis.prefix()}session:touched`)).toBeGreaterThan(10_000);
    await vi.waitFor(async () => expect(await a.sessionOwner('decode:m', 'short')).toBeUndefined(), WAIT);
    expect(await a.sessionOwner('decode:m', 'touched')).toBe('w1');
    await a.touchSessions([], 1);
  });
});

describe('load', () => {
  it('sums the other live replicas, leaves its own out, drops a replica after its TTL', async () => {
    const [a, b, c] = [await redis.store(), await redis.store(), await redis.store()];
    await a.reportLoad({ w1: 2, w2: 1 }, 60_000);
    await b.reportLoad({ w1: 3, w3: 0 }, 60_000);
    expect(await c.readRemoteLoad()).toEqual({ w1: 5, w2: 1 });
    expect(await a.readRemoteLoad()).toEqual({ w1: 3 });
    expect(await b.readRemoteLoad()).toEqual({ w1: 2, w2: 1 });

    await b.reportLoad({ w1: 1 }, 200);
    expect(await c.readRemoteLoad()).toEqual({ w1: 3, w2: 1 });
    await vi.waitFor(async () => expect(await c.readRemoteLoad()).toEqual({ w1: 2, w2: 1 }), WAIT);
    expect(await redis.admin().zRange(`${redis.prefix()}replicas`, 0, -1)).toEqual([a.replicaId]);
  });

  it('a report replaces the previous one', async () => {
    const a = await redis.store();
    const b = await redis.store();
    await a.reportLoad({ w1: 2 }, 60_000);
    await a.reportLoad({ w2: 1 }, 60_000);
    expect(await b.readRemoteLoad()).toEqual({ w2: 1 });
    await a.reportLoad({}, 60_000);
    expect(await b.readRemoteLoad()).toEqual({});
  });
});

describe('events', () => {
  const registry: SharedEvent = { type: 'registry' };
  const session = (n: number): SharedEvent => ({
    type: 'session',
    pool: 'decode:m',
    sessionId: `s${n}`,
    workerId: 'w1',
  });

  it('delivers the other replicas’ batches in order, never its own', async () => {
    const a = await redis.store();
    const b = await redis.store();
    const seenByA = recordingSubscriber();
    const seenByB = recordingSubscriber();
    a.subscribe(seenByA.subscriber);
    b.subscribe(seenByB.subscriber);
    // A subscription reports a gap once it has its starting point: nothing before it is delivered.
    await vi.waitFor(() => expect(seenByA.gaps() + seenByB.gaps()).toBe(2), WAIT);

    await a.publish([registry]);
    for (let n = 0; n < 5; n++) await b.publish([session(n), session(n + 100)]);
    await a.publish([session(999)]);
    await vi.waitFor(() => expect(seenByA.batches).toHaveLength(5), WAIT);
    await vi.waitFor(() => expect(seenByB.batches).toHaveLength(2), WAIT);

    expect(seenByA.batches).toEqual(
      [0, 1, 2, 3, 4].map((n) => ({ from: b.replicaId, events: [session(n), session(n + 100)] })),
    );
    expect(seenByB.batches).toEqual([
      { from: a.replicaId, events: [registry] },
      { from: a.replicaId, events: [session(999)] },
    ]);
    expect(seenByA.connection).toEqual([]);
  });

  it('skips what was published before the subscription', async () => {
    const a = await redis.store();
    const b = await redis.store();
    await b.publish([session(1)]);
    const seen = recordingSubscriber();
    a.subscribe(seen.subscriber);
    await vi.waitFor(() => expect(seen.gaps()).toBe(1), WAIT);
    await b.publish([session(2)]);
    await vi.waitFor(() => expect(seen.batches).toHaveLength(1), WAIT);
    expect(seen.batches[0]?.events).toEqual([session(2)]);
  });

  it('stop() ends the subscription and closes its connection; close() closes the rest', async () => {
    const a = await redis.store();
    const b = await redis.store();
    const connections = async (): Promise<number> =>
      (await redis.admin().clientList()).filter((c) => c.name === `vllm-router-${a.replicaId}`).length;
    const seen = recordingSubscriber();
    const subscription = a.subscribe(seen.subscriber);
    await vi.waitFor(() => expect(seen.gaps()).toBe(1), WAIT);
    expect(await connections()).toBe(2);
    subscription.stop();
    await vi.waitFor(async () => expect(await connections()).toBe(1), WAIT);
    await b.publish([session(1)]);
    await b.publish([registry]);
    expect(await b.recentEvents(1)).toHaveLength(1);
    expect(seen.batches).toEqual([]);

    a.subscribe(recordingSubscriber().subscriber);
    await vi.waitFor(async () => expect(await connections()).toBe(2), WAIT);
    await a.close();
    await vi.waitFor(async () => expect(await connections()).toBe(0), WAIT);
    await expect(a.readRegistry()).rejects.toThrow(/closed/);
  });

  it('recentEvents answers the newest batches of every replica, oldest first', async () => {
    const a = await redis.store();
    const b = await redis.store();
    expect(await a.recentEvents(10)).toEqual([]);
    await a.publish([session(1)]);
    await b.publish([session(2)]);
    await a.publish([]);
    await a.publish([session(3), registry]);
    expect(await b.recentEvents(2)).toEqual([
      { from: b.replicaId, events: [session(2)] },
      { from: a.replicaId, events: [session(3), registry] },
    ]);
    expect(await a.recentEvents(10)).toHaveLength(3);
    expect(await a.recentEvents(0)).toEqual([]);
  });
});

describe('ping', () => {
  it('answers the round trip in ms', async () => {
    const a = await redis.store();
    const ms = await a.ping();
    expect(ms).toBeGreaterThanOrEqual(0);
    expect(ms).toBeLessThan(1000);
    expect(a.connected).toBe(true);
  });
});

describe('--state-store URLs', () => {
  it('reads host, port, database and TLS; masks any password', () => {
    expect(parseRedisUrl('redis://cache.internal:6380/2')).toEqual({
      host: 'cache.internal',
      port: 6380,
      tls: false,
      database: 2,
      displayUrl: 'redis://cache.internal:6380/2',
    });
    expect(parseRedisUrl('rediss://cache.internal')).toMatchObject({ tls: true, port: 6379, database: 0 });
    expect(parseRedisUrl('redis://[::1]:7000/1')).toMatchObject({
      host: '::1',
      displayUrl: 'redis://[::1]:7000/1',
    });
    const withSecret = parseRedisUrl('redis://:s3cret@cache:6379/0');
    expect(withSecret).toMatchObject({ password: 's3cret', displayUrl: 'redis://***@cache:6379/0' });
    expect(parseRedisUrl('redis://user:s3cret@cache/0', 'fromEnv')).toMatchObject({
      username: 'user',
      password: 'fromEnv',
      displayUrl: 'redis://***@cache:6379/0',
    });
    expect(parseRedisUrl('redis://cache/0', 'fromEnv')).toMatchObject({
      password: 'fromEnv',
      displayUrl: 'redis://cache:6379/0',
    });
  });

  it('rejects what is not a Redis URL, naming --state-store and never the password', async () => {
    for (const bad of ['cache:6379', 'http://cache:6379', 'redis://cache:6379/zero', 'redis://:pw@/0']) {
      expect(() => parseRedisUrl(bad)).toThrow(/--state-store/);
    }
    expect(() => parseRedisUrl('http://:hunter2@cache/0')).toThrow(/^(?!.*hunter2)/);
    await expect(createRedisStore({ url: 'redis//cache' })).rejects.toThrow(/--state-store/);
  });
});
