/**
 * Runs in Node before the workerd tests: starts the simulated engines on loopback (port 0) and
 * provides their URLs (vitest.workers.config.ts passes them to the Worker as ROUTER_CONFIG; the
 * tests read them with inject('engines')). Stops them by handle afterwards.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestProject } from 'vitest/node';
import { startSimEngine } from '../../../src/sim/node.ts';
import { DUO_MODELS, GOOD_CLIENT_TOKEN, type TestEngines } from './router-config.ts';

/** A token validation service: 200 for GOOD_CLIENT_TOKEN, 401 for anything else. */
async function startValidator(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    res.writeHead(req.headers.authorization === `Bearer ${GOOD_CLIENT_TOKEN}` ? 200 : 401).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/validate`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const start = (id: string, models: string[], unhealthy = false) =>
    startSimEngine({ id, models, unhealthy, host: '127.0.0.1', port: 0, ttftMs: 2, itlMs: 2 });
  const running = await Promise.all([
    start('sim-a', ['sim-model']),
    start('sim-b', ['sim-model']),
    start('sim-flaky', ['flaky-model']),
    start('sim-sick', ['sick-model'], true),
    start('sim-duo-1', DUO_MODELS),
    start('sim-duo-2', DUO_MODELS),
  ]);
  const [a, b, flaky, sick, duo1, duo2] = running.map((r) => r.url) as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const validator = await startValidator();
  const engines: TestEngines = { a, b, flaky, sick, duo: [duo1, duo2], validator: validator.url };
  project.provide('engines', engines);
  return async () => {
    await Promise.all([...running.map((r) => r.close()), validator.close()]);
  };
}
