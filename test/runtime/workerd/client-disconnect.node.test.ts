/**
 * Client disconnects in workerd, with a real HTTP client (runs in Node: Miniflare serves the
 * bundled Worker on loopback). A workerd request whose client leaves is torn down without any of
 * its callbacks running unless something holds it open; the Worker holds it until the response
 * body is over, so the cancel reaches the core's relay: the engine request is cancelled and the
 * lease is settled at once (not when it expires).
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimEngine, startSimEngine } from '../../../src/sim/node.ts';
import { type MiniflareWorker, startMiniflareWorker } from './miniflare-worker.ts';

let engine: RunningSimEngine;
let worker: MiniflareWorker;

beforeAll(async () => {
  engine = await startSimEngine({
    id: 'sim-a',
    host: '127.0.0.1',
    port: 0,
    tokens: 200,
    ttftMs: 5,
    itlMs: 20,
  });
  worker = await startMiniflareWorker({
    routerConfig: {
      workers: { urls: [engine.url] },
      server: { requestTimeoutSecs: 1 },
      log: { level: 'error' },
    },
  });
});

afterAll(async () => {
  await worker?.dispose();
  await engine?.close();
});

const load = async () =>
  ((await (await fetch(`${worker.url}/get_loads`)).json()) as { workers: { load: number }[] }).workers[0]
    ?.load;

/** Sends a streaming chat request and destroys the connection after the first body chunk (or after `ms`). */
function leaveEarly(afterMs?: number): Promise<void> {
  const body = JSON.stringify({
    model: 'sim-model',
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
  });
  return new Promise((resolve) => {
    const req = http.request(
      `${worker.url}/v1/chat/completions`,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      },
    );
    req.on('error', () => {});
    req.end(body);
    if (afterMs !== undefined) {
      setTimeout(() => {
        req.destroy();
        resolve();
      }, afterMs);
    }
  });
}

describe('Worker in workerd over real HTTP', () => {
  it('cancels the engine request and settles the lease when the client leaves mid-stream', async () => {
    engine.engine.configure({ failure: { mode: 'none' } });
    engine.engine.reset();
    await leaveEarly();
    const entry = await engine.engine.waitForLog((e) => e.aborted, 5000);
    expect(entry.completed).toBe(false);
    expect(entry.tokensSent).toBeLessThan(200);
    await expect.poll(load, { timeout: 5000 }).toBe(0);
    // A client that leaves counts as nothing on the engine's breaker (not as a broken stream).
    const metrics = await (await fetch(`${worker.url}/metrics`)).text();
    expect(metrics).toContain(`vllm_router_cb_outcomes_total{worker="${engine.url}",outcome="aborted"} 1`);
    expect(metrics).not.toContain('outcome="failure"');
    expect(metrics).not.toContain('vllm_router_stream_errors_total{');
  });

  it('releases the lease at the request timeout when the client leaves before the headers', async () => {
    // Locally nothing tells the Worker that this client left (request.signal does not fire), so
    // the request runs to its deadline (1 s here), which cancels the engine and settles the lease.
    engine.engine.configure({ failure: { mode: 'hang' } });
    engine.engine.reset();
    await leaveEarly(200);
    expect(await load()).toBe(1);
    const entry = await engine.engine.waitForLog((e) => e.aborted, 5000);
    expect(entry.status).toBeNull();
    await expect.poll(load, { timeout: 5000 }).toBe(0);
  });
});
