/**
 * Starting the Node router over real loopback HTTP: the listeners bind before the workers are
 * probed (readiness 503 until one is healthy), the startup timeout is logged and the router keeps
 * serving (fake clock), every health transition logs why (status, error kind, the URL probed: a
 * worker URL given with /v1 is diagnosable), a listener that cannot bind leaves nothing bound, and
 * --health-check-port serves the probes.
 */
import { once } from 'node:events';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type NodeRouter, startNodeRouter } from '../../src/adapters/node/server.ts';
import { ConfigError } from '../../src/core/config/errors.ts';
import type { Upstream } from '../../src/core/contracts/upstream.ts';
import { fetchUpstream } from '../../src/core/upstream/fetch-upstream.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { type RunningEngine, startEngines, testConfig } from '../support/harness.ts';

interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

let routers: NodeRouter[] = [];
let engines: RunningEngine[] = [];
let others: (Server | HttpServer)[] = [];
afterEach(async () => {
  await Promise.all(routers.map((r) => r.close(0)));
  await Promise.all(engines.map((e) => e.close()));
  for (const s of others) {
    (s as HttpServer).closeAllConnections?.();
    s.close();
  }
  routers = [];
  engines = [];
  others = [];
});

/** A router logging JSON lines at info into `logs`. */
async function router(
  urls: string[],
  options: {
    clock?: FakeClock;
    config?: Parameters<typeof testConfig>[1];
    startup?: 'wait' | 'background';
    upstream?: Upstream;
  } = {},
) {
  const logs: LogLine[] = [];
  const r = await startNodeRouter(
    testConfig(urls, { log: { level: 'info', json: true }, ...options.config }),
    {
      logSink: (line) => void logs.push(JSON.parse(line) as LogLine),
      healthLoop: false,
      startup: options.startup ?? 'background',
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.upstream ? { upstream: options.upstream } : {}),
    },
  );
  routers.push(r);
  return { r, logs };
}

async function readiness(url: string) {
  const res = await fetch(`${url}/readiness`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function listening<T extends Server | HttpServer>(server: T): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  others.push(server);
  return (server.address() as { port: number }).port;
}

/** A port nothing listens on (bound once, then released). */
async function closedPort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as { port: number };
  await new Promise((resolve) => s.close(resolve));
  return port;
}

describe('startup behind the listener', () => {
  it('listens at once; readiness 503 until the first healthy probe, then 200', async () => {
    const clock = new FakeClock();
    engines = await startEngines(1, { unhealthy: true });
    const { r, logs } = await router([engines[0]!.url], { clock });
    let started: boolean | undefined;
    void r.ready.then((healthy) => {
      started = healthy;
    });
    expect(await readiness(r.url)).toMatchObject({ status: 503, body: { reason: 'no_available_workers' } });
    // Probe, then the sleep before the next round (min of the startup check and health intervals).
    await expect.poll(() => clock.requested.includes(30_000), { timeout: 5000, interval: 5 }).toBe(true);
    expect(logs.find((l) => l.msg === 'waiting for a healthy worker')).toMatchObject({ workers: 1 });
    expect(started).toBeUndefined();
    engines[0]!.engine.configure({ unhealthy: false });
    clock.advance(30_000);
    expect(await r.ready).toBe(true);
    expect((await readiness(r.url)).status).toBe(200);
    expect(logs.map((l) => l.msg)).toContain('worker healthy');
  });

  it('the startup timeout is logged, not fatal: the router keeps serving with readiness 503', async () => {
    const clock = new FakeClock();
    engines = await startEngines(1, { unhealthy: true });
    const { r, logs } = await router([engines[0]!.url], {
      clock,
      config: { workers: { startupTimeoutSecs: 45 } },
    });
    await expect.poll(() => clock.requested.includes(30_000), { timeout: 5000, interval: 5 }).toBe(true);
    clock.advance(30_000);
    // The second round sleeps only what is left of the 45 s.
    await expect.poll(() => clock.requested.includes(15_000), { timeout: 5000, interval: 5 }).toBe(true);
    clock.advance(15_000);
    expect(await r.ready).toBe(false);
    expect(logs.find((l) => l.level === 'warn' && l.msg.startsWith('no healthy worker'))).toEqual(
      expect.objectContaining({
        msg: 'no healthy worker within --worker-startup-timeout-secs (45 s): still serving; /readiness answers 503 until a worker is healthy',
        workers: 1,
        unhealthy: [engines[0]!.url],
      }),
    );
    expect((await fetch(`${r.url}/liveness`)).status).toBe(200);
    expect((await readiness(r.url)).status).toBe(503);
    // A later health tick still brings the worker in.
    engines[0]!.engine.configure({ unhealthy: false });
    await r.healthTick();
    expect((await readiness(r.url)).status).toBe(200);
  });

  it("startup: 'wait' resolves once the startup round is over (what most tests rely on)", async () => {
    engines = await startEngines(1);
    const { r } = await router([engines[0]!.url], { startup: 'wait' });
    expect((await readiness(r.url)).status).toBe(200);
  });
});

describe('health transitions log their reason', () => {
  it('a worker URL ending in /v1: HTTP 404 from <url>/v1/health, with the fix', async () => {
    engines = await startEngines(1);
    const url = `${engines[0]!.url}/v1`;
    const { r, logs } = await router([url], {
      startup: 'wait',
      config: { workers: { startupTimeoutSecs: 0.01 } },
    });
    expect(await r.ready).toBe(false);
    expect(logs.find((l) => l.msg === 'health probe failed')).toEqual(
      expect.objectContaining({
        level: 'warn',
        worker: url,
        probe_url: `${url}/health`,
        kind: 'http_status',
        status: 404,
        hint: 'the worker URL ends in /v1: give the engine base URL without it (http://HOST:PORT)',
      }),
    );
  });

  it.each(['undici', 'fetch'] as const)(
    'connection refused (%s transport): the kind, the socket error and the URL',
    async (transport) => {
      const url = `http://127.0.0.1:${await closedPort()}`;
      const { r, logs } = await router([url], {
        startup: 'wait',
        config: { workers: { startupTimeoutSecs: 0.01 } },
        ...(transport === 'fetch' ? { upstream: fetchUpstream() } : {}),
      });
      await r.ready;
      const line = logs.find((l) => l.msg === 'health probe failed');
      expect(line).toMatchObject({ worker: url, probe_url: `${url}/health`, kind: 'connection_refused' });
      // Node's fetch says only "fetch failed"; the cause names the socket error.
      expect(line?.error).toContain('ECONNREFUSED');
    },
  );

  it('a probe timeout (fake clock): kind timeout', async () => {
    const clock = new FakeClock();
    const arrived: string[] = [];
    const hanging = createHttpServer((req) => void arrived.push(req.url ?? ''));
    const url = `http://127.0.0.1:${await listening(hanging)}`;
    const { logs } = await router([url], { clock, config: { health: { timeoutSecs: 5 } } });
    await expect.poll(() => arrived, { timeout: 5000, interval: 5 }).toEqual(['/health']);
    clock.advance(5000);
    await expect
      .poll(() => logs.find((l) => l.msg === 'health probe failed'), { timeout: 5000, interval: 5 })
      .toMatchObject({ probe_url: `${url}/health`, kind: 'timeout', error: 'timeout after 5000 ms' });
  });

  it('healthy → unhealthy → healthy: each change logged once, with the status and URL probed', async () => {
    engines = await startEngines(1);
    const url = engines[0]!.url;
    const { r, logs } = await router([url], {
      startup: 'wait',
      config: { health: { failureThreshold: 2, successThreshold: 2 } },
    });
    expect(await r.ready).toBe(true);
    engines[0]!.engine.configure({ unhealthy: true });
    for (let i = 0; i < 3; i++) await r.healthTick();
    engines[0]!.engine.configure({ unhealthy: false });
    for (let i = 0; i < 2; i++) await r.healthTick();
    const health = logs
      .filter((l) => /^(health probe|worker (un)?healthy)/.test(l.msg))
      .map(({ time: _t, ...rest }) => rest);
    expect(health).toEqual([
      { level: 'info', msg: 'worker healthy', worker: url },
      {
        level: 'warn',
        msg: 'health probe failed',
        worker: url,
        probe_url: `${url}/health`,
        kind: 'http_status',
        status: 503,
        error: 'HTTP 503',
      },
      { level: 'warn', msg: 'worker unhealthy', worker: url, error: `HTTP 503 from GET ${url}/health` },
      { level: 'info', msg: 'health probe ok', worker: url, probe_url: `${url}/health` },
      { level: 'info', msg: 'worker healthy', worker: url },
    ]);
  });
});

describe('listeners', () => {
  it('one that cannot bind rejects with the flag named, and leaves none bound', async () => {
    const busy = await listening(createServer());
    const free = await closedPort();
    const attempt = startNodeRouter(
      testConfig([], { server: { port: free }, metrics: { port: busy }, log: { level: 'error' } }),
      { logSink: () => {} },
    );
    await expect(attempt).rejects.toThrow(ConfigError);
    await expect(attempt).rejects.toThrow(
      `--prometheus-port ${busy}: address 127.0.0.1:${busy} is already in use`,
    );
    // The router's own listener, bound first, was closed again: its port is free.
    const rebind = createServer();
    rebind.listen(free, '127.0.0.1');
    await once(rebind, 'listening');
    others.push(rebind);
  });

  it('--health-check-port serves /health, /liveness and /readiness, nothing else', async () => {
    engines = await startEngines(1);
    const port = await closedPort();
    const { r } = await router([engines[0]!.url], { startup: 'wait', config: { health: { port } } });
    expect(r.healthUrl).toBe(`http://127.0.0.1:${port}`);
    expect((await fetch(`${r.healthUrl}/readiness`)).status).toBe(200);
    expect((await fetch(`${r.healthUrl}/liveness`)).status).toBe(200);
    const other = await fetch(`${r.healthUrl}/v1/models`);
    expect(other.status).toBe(404);
    await other.arrayBuffer();
  });
});
