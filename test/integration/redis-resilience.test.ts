/**
 * The Redis SharedStore when Redis is down, slow or cut off: commands fail fast or time out with
 * an Error, the client reconnects on its own, one warning per state change, and a subscription
 * resumes where it stopped (or reports the gap when the stream was trimmed meanwhile). The cut
 * and stalled connections are real: a TCP proxy in front of the real Redis, refusing or holding.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StateStoreError } from '../../src/adapters/redis/redis-store.ts';
import type { SharedEvent } from '../../src/core/contracts/shared-store.ts';
import { deadPort } from '../support/net.ts';
import { REDIS_HOST, REDIS_PORT, recordingSubscriber, useRedis } from '../support/redis.ts';
import { silentServer, type TcpProxy, tcpProxy } from '../support/tcp-proxy.ts';

const redis = useRedis();
const WAIT = { timeout: 5000, interval: 20 };
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function proxy(): Promise<TcpProxy> {
  const p = await tcpProxy({ host: REDIS_HOST, port: REDIS_PORT });
  closers.push(() => p.close());
  return p;
}

function warnings() {
  const lines: string[] = [];
  return { lines, logger: { warn: (msg: string) => lines.push(msg) } };
}

const session = (n: number): SharedEvent => ({
  type: 'session',
  pool: 'decode:m',
  sessionId: `s${n}`,
  workerId: 'w1',
});

/** Every method of the store, called once. */
function everyMethod(store: Awaited<ReturnType<typeof redis.store>>): Array<Promise<unknown>> {
  return [
    store.readRegistry(),
    store.putWorker({
      id: 'w',
      spec: { url: 'http://w' },
      models: null,
      modelsStatic: false,
      draining: false,
    }),
    store.deleteWorker('w'),
    store.readVerdicts(),
    store.putVerdict('w', { healthy: true, at: 1 }),
    store.sessionOwner('p', 's'),
    store.claimSession('p', 's', 'w', 1000),
    store.moveSession('p', 's', 'w', 1000),
    store.touchSessions(['s'], 1000),
    store.finishSession('s'),
    store.reportLoad({ w: 1 }, 1000),
    store.readRemoteLoad(),
    store.publish([session(1)]),
    store.recentEvents(1),
    store.ping(),
  ];
}

describe('Redis down', () => {
  it('where nothing listens, every method rejects at once with an Error, and nothing crashes', async () => {
    const log = warnings();
    const started = performance.now();
    const store = await redis.store({ url: `redis://127.0.0.1:${await deadPort()}/0`, logger: log.logger });
    const seen = recordingSubscriber();
    store.subscribe(seen.subscriber);
    for (const call of everyMethod(store)) await expect(call).rejects.toBeInstanceOf(StateStoreError);
    expect(performance.now() - started).toBeLessThan(1000);
    await expect(store.readRegistry()).rejects.toThrow(/not connected/);
    await vi.waitFor(() => expect(seen.connection).toEqual([false]), WAIT);
    expect(log.lines).toEqual(['state store unreachable: routing on local state']);
  });

  it('keeps reconnecting in the background, one warning per state change, and works again', async () => {
    const p = await proxy();
    const log = warnings();
    const store = await redis.store({ url: `redis://127.0.0.1:${p.port}/0`, logger: log.logger });
    await store.putWorker({
      id: 'w',
      spec: { url: 'http://w' },
      models: null,
      modelsStatic: false,
      draining: false,
    });
    expect(log.lines).toEqual([]);

    p.refuse(true);
    await vi.waitFor(() => expect(store.connected).toBe(false), WAIT);
    const attempts = p.attempts();
    await vi.waitFor(() => expect(p.attempts()).toBeGreaterThanOrEqual(attempts + 3), WAIT);
    for (const call of everyMethod(store)) await expect(call).rejects.toThrow(/not connected/);
    expect(log.lines).toEqual(['state store unreachable: routing on local state']);

    p.refuse(false);
    await vi.waitFor(() => expect(store.connected).toBe(true), WAIT);
    expect((await store.readRegistry()).map((w) => w.id)).toEqual(['w']);
    expect(log.lines).toEqual([
      'state store unreachable: routing on local state',
      'state store reachable again',
    ]);
  });
});

describe('Redis slow', () => {
  it('a command unanswered rejects after commandTimeoutMs; answers resume with the server', async () => {
    const p = await proxy();
    const store = await redis.store({ url: `redis://127.0.0.1:${p.port}/0`, commandTimeoutMs: 200 });
    await store.ping();
    p.pause();
    const started = performance.now();
    await expect(store.readRegistry()).rejects.toThrow(/no answer within 200 ms/);
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(150);
    expect(elapsed).toBeLessThan(1000);
    await expect(store.claimSession('p', 's', 'w', 1000)).rejects.toBeInstanceOf(StateStoreError);
    p.resume();
    expect(await store.claimSession('p', 's', 'w2', 1000)).toBe('w');
  });

  it('a server that accepts and never answers: the factory returns, commands reject in time', async () => {
    const server = await silentServer();
    closers.push(() => server.close());
    const log = warnings();
    const started = performance.now();
    const store = await redis.store({
      url: `redis://127.0.0.1:${server.port}/0`,
      connectTimeoutMs: 300,
      commandTimeoutMs: 200,
      logger: log.logger,
    });
    expect(performance.now() - started).toBeLessThan(1000);
    expect(log.lines).toEqual(['state store not answering: routing on local state']);
    const call = performance.now();
    await expect(store.readRegistry()).rejects.toBeInstanceOf(StateStoreError);
    expect(performance.now() - call).toBeLessThan(400);
  });
});

describe('subscription across connection trouble', () => {
  async function subscribedThroughProxy(blockMs = 1000) {
    const p = await proxy();
    const a = await redis.store({ url: `redis://127.0.0.1:${p.port}/0`, blockMs, commandTimeoutMs: 200 });
    const b = await redis.store();
    const seen = recordingSubscriber();
    a.subscribe(seen.subscriber);
    await vi.waitFor(() => expect(seen.gaps()).toBe(1), WAIT);
    await b.publish([session(0)]);
    await vi.waitFor(() => expect(seen.batches).toHaveLength(1), WAIT);
    return { p, a, b, seen };
  }

  it('after a drop, continues from the last id seen: nothing missed, no gap', async () => {
    const { p, b, seen } = await subscribedThroughProxy();
    p.refuse(true);
    await vi.waitFor(() => expect(seen.connection).toEqual([false]), WAIT);
    for (let n = 1; n <= 3; n++) await b.publish([session(n)]);
    p.refuse(false);
    await vi.waitFor(() => expect(seen.batches).toHaveLength(4), WAIT);
    expect(seen.batches.map((batch) => batch.events[0])).toEqual([0, 1, 2, 3].map(session));
    expect(seen.connection).toEqual([false, true]);
    expect(seen.gaps()).toBe(1);
  });

  it('when the entries after the last id were trimmed meanwhile: onGap once, then from the newest', async () => {
    const { p, b, seen } = await subscribedThroughProxy();
    p.refuse(true);
    await vi.waitFor(() => expect(seen.connection).toEqual([false]), WAIT);
    for (let n = 1; n <= 3; n++) await b.publish([session(n)]);
    await redis.admin().xTrim(`${redis.prefix()}events`, 'MAXLEN', 0);
    p.refuse(false);
    await vi.waitFor(() => expect(seen.gaps()).toBe(2), WAIT);
    expect(seen.connection).toEqual([false, true]);
    await b.publish([session(4)]);
    await vi.waitFor(() => expect(seen.batches).toHaveLength(2), WAIT);
    expect(seen.batches.map((batch) => batch.events[0])).toEqual([session(0), session(4)]);
    expect(seen.gaps()).toBe(2);
  });

  it('a read stalled past its block time reports the connection down, then up when answered', async () => {
    const { p, b, seen } = await subscribedThroughProxy(200);
    p.pause();
    await vi.waitFor(() => expect(seen.connection).toEqual([false]), WAIT);
    await b.publish([session(1)]);
    p.resume();
    await vi.waitFor(() => expect(seen.batches).toHaveLength(2), WAIT);
    expect(seen.connection).toEqual([false, true]);
    expect(seen.gaps()).toBe(1);
  });
});
