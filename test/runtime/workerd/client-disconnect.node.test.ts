/**
 * Client disconnects in workerd, with a real HTTP client (runs in Node: Miniflare serves the
 * bundled Worker on loopback). A workerd request whose client leaves is torn down without any of
 * its callbacks running unless something holds it open; the Worker holds it until the response
 * body is over. When workerd reports the departure the cancel reaches the core's relay at once;
 * when it does not (mostly, locally), the relay ends the exchange at the request deadline because
 * nobody is reading. Either way the engine request is cancelled and the relay settles the lease as
 * aborted (never left to expire).
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimEngine, startSimEngine } from '../../../src/sim/node.ts';
import { type MiniflareWorker, startMiniflareWorker } from './miniflare-worker.ts';

const REQUEST_TIMEOUT_MS = 1000;

let engine: RunningSimEngine;
let worker: MiniflareWorker;
const ADMIN_KEY = 'disconnect-test-admin-key';

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
    adminKey: ADMIN_KEY,
    routerConfig: {
      workers: { urls: [engine.url] },
      server: { requestTimeoutSecs: REQUEST_TIMEOUT_MS / 1000 },
      log: { level: 'error' },
    },
  });
});

afterAll(async () => {
  await worker?.dispose();
  await engine?.close();
});

const metricsText = async () => (await fetch(`${worker.url}/metrics`)).text();

/** The value of one series in a Prometheus text page (0 when absent). */
const series = (text: string, name: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
};

/** Settle calls served, summed over the fleet's objects (the `object` label). */
const settles = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith('vllm_router_fleet_object_calls_total{method="settle",'))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);

const load = async () =>
  (
    (await (
      await fetch(`${worker.url}/get_loads`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
    ).json()) as { workers: { load: number }[] }
  ).workers[0]?.load;

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
    const settlesBefore = settles(await metricsText());
    await leaveEarly();
    const entry = await engine.engine.waitForLog((e) => e.aborted, 5000);
    expect(entry.completed).toBe(false);
    expect(entry.tokensSent).toBeLessThan(200);
    // Locally, workerd mostly does not report a client that leaves mid-stream (no body cancel, no
    // request.signal). The relay then notices at the deadline (1 s here) that nobody is reading:
    // the engine request is cancelled by then at the latest, never left running.
    expect(
      (entry.tEndMs ?? Number.POSITIVE_INFINITY) - entry.tMs,
      'engine request outlived the request deadline',
    ).toBeLessThan(REQUEST_TIMEOUT_MS + 500);
    // Settled by the relay (one settle call reaches the object, counted as aborted), not reclaimed
    // at its expiry, which counts no outcome. The settle travels after the response is over
    // (waitUntil): wait for it, bounded.
    const aborted = `vllm_router_cb_outcomes_total{worker="${engine.url}",outcome="aborted"}`;
    await expect.poll(async () => series(await metricsText(), aborted), { timeout: 5000 }).toBe(1);
    const metrics = await metricsText();
    expect(settles(metrics)).toBe(settlesBefore + 1);
    expect(await load()).toBe(0);
    // A client that leaves counts as nothing on the engine's breaker (not as a broken stream).
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
