import { afterEach, describe, expect, it } from 'vitest';
import { driveClock, FakeClock, seededRandom } from '../support/fake-clock.ts';
import { type Running, startStack } from '../support/harness.ts';

const chat = JSON.stringify({
  model: 'sim-model',
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 2,
});
const post = (url: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: chat,
  });

describe('circuit breakers and health checks over loopback', () => {
  let stack: Running | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it('opens the circuit of a failing engine, moves traffic away, and probes it back after the timeout', async () => {
    const clock = new FakeClock();
    stack = await startStack({
      engines: 3,
      config: { circuitBreaker: { failureThreshold: 3, successThreshold: 2, timeoutDurationSecs: 60 } },
      router: { clock, random: seededRandom(2), healthLoop: false },
    });
    const [, , bad] = stack.engines;
    bad!.engine.configure({ failure: { mode: 'status', status: 500 } });
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await driveClock(clock, post(stack.router.url));
      statuses.push(res.status);
      await res.arrayBuffer();
    }
    expect(statuses.every((s) => s === 200)).toBe(true); // retries absorbed every failure
    expect(bad!.engine.log).toHaveLength(3); // then the circuit opened
    expect(stack.router.fleet.getWorker(bad!.url)?.circuit).toBe('open');
    const metrics = await (await fetch(`${stack.router.url}/metrics`)).text();
    expect(metrics).toContain(`vllm_router_cb_state{worker="${bad!.url}"} 1`);
    expect(metrics).toContain(
      `vllm_router_cb_state_transitions_total{worker="${bad!.url}",from="closed",to="open"} 1`,
    );
    expect(metrics).toContain(`vllm_router_cb_outcomes_total{worker="${bad!.url}",outcome="failure"} 3`);

    // The engine recovers; after the timeout the breaker admits probes, and their successes close it.
    bad!.engine.configure({ failure: { mode: 'none' } });
    clock.advance(60_000);
    for (let i = 0; i < 12; i++) {
      const res = await driveClock(clock, post(stack.router.url));
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    expect(bad!.engine.log.length).toBeGreaterThan(3);
    expect(stack.router.fleet.getWorker(bad!.url)?.circuit).toBe('closed');
  });

  it('never opens the circuit of an engine that answers 400 forever', async () => {
    stack = await startStack({
      engines: 1,
      engineOptions: { failure: { mode: 'status', status: 400 } },
      config: { circuitBreaker: { failureThreshold: 2 } },
      router: { healthLoop: false },
    });
    for (let i = 0; i < 6; i++) expect((await post(stack.router.url)).status).toBe(400);
    expect(stack.router.fleet.getWorker(stack.engines[0]!.url)?.circuit).toBe('closed');
  });

  it('drops an engine whose /health fails after the threshold, and takes it back after recovery', async () => {
    stack = await startStack({
      engines: 2,
      config: { health: { failureThreshold: 2, successThreshold: 2 } },
      router: { healthLoop: false },
    });
    const [good, sick] = stack.engines;
    sick!.engine.configure({ unhealthy: true });
    await stack.router.healthTick();
    expect(stack.router.fleet.getWorker(sick!.url)?.healthy).toBe(true); // one failure is not enough
    await stack.router.healthTick();
    expect(stack.router.fleet.getWorker(sick!.url)?.healthy).toBe(false);

    sick!.engine.reset();
    for (let i = 0; i < 6; i++) await (await post(stack.router.url)).arrayBuffer();
    expect(sick!.engine.log).toHaveLength(0);
    expect(good!.engine.log).toHaveLength(6);
    const health = await fetch(`${stack.router.url}/health`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { unhealthy_workers: string[] }).unhealthy_workers).toEqual([sick!.url]);

    sick!.engine.configure({ unhealthy: false });
    await stack.router.healthTick();
    expect(stack.router.fleet.getWorker(sick!.url)?.healthy).toBe(false);
    await stack.router.healthTick();
    expect(stack.router.fleet.getWorker(sick!.url)?.healthy).toBe(true);
    expect(sick!.engine.probeLog.filter((e) => e.path === '/health')).toHaveLength(2); // still probed while out
    for (let i = 0; i < 4; i++) await (await post(stack.router.url)).arrayBuffer();
    expect(sick!.engine.log.length).toBeGreaterThan(0);
  });

  it('flips /readiness to 503 when every engine is down, and requests get no_available_workers', async () => {
    stack = await startStack({
      engines: 2,
      config: { health: { failureThreshold: 1 }, retry: { disabled: true } },
      router: { healthLoop: false },
    });
    expect((await fetch(`${stack.router.url}/readiness`)).status).toBe(200);
    for (const e of stack.engines) e.engine.configure({ unhealthy: true });
    await stack.router.healthTick();
    expect((await fetch(`${stack.router.url}/readiness`)).status).toBe(503);
    expect((await fetch(`${stack.router.url}/health`)).status).toBe(503);
    const res = await post(stack.router.url);
    expect(res.status).toBe(503);
    expect(res.headers.get('x-router-error-code')).toBe('no_available_workers');
    const metrics = await (await fetch(`${stack.router.url}/metrics`)).text();
    expect(metrics).toContain('vllm_router_active_workers 0');
  });

  it('proxies /health_generate to a healthy engine', async () => {
    stack = await startStack({ engines: 1, router: { healthLoop: false } });
    const res = await fetch(`${stack.router.url}/health_generate`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-routed-worker-id')).toBe(stack.engines[0]!.url);
  });
});
