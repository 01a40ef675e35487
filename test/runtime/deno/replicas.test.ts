/**
 * Shared state on Deno: a Deno router (the `deno` binary from node_modules, a real process, with
 * the permissions `deno task start` grants) and a Node router share one fleet through the real
 * Redis. An admin change made through either reaches the other; the Deno router's /health shows
 * the store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimEngine } from '../../../src/sim/node.ts';
import { REDIS_URL, useRedis } from '../../support/redis.ts';
import { builtEntry, chatRequest, REPO_ROOT, spawnRouter } from '../router-process.ts';

const DENO = join(REPO_ROOT, 'node_modules/deno/deno');
const ENTRY = join(REPO_ROOT, 'src/adapters/deno/main.ts');
const PERMISSIONS = ['--allow-net', '--allow-env', '--allow-read'];
const denoDir = mkdtempSync(join(tmpdir(), 'vllm-edge-router-deno-replicas-'));
const env = { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: '1' };

afterAll(() => rmSync(denoDir, { recursive: true, force: true }));

const redis = useRedis();

async function workerIds(url: string): Promise<string[]> {
  const body = (await (await fetch(`${url}/workers`)).json()) as { workers: { id: string }[] };
  return body.workers.map((w) => w.id).sort();
}

async function eventually(check: () => Promise<void>, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

describe('shared state on Deno', () => {
  it('a Deno and a Node replica follow each other through Redis', async () => {
    const a = await startSimEngine({ id: 'deno-rep-a', host: '127.0.0.1', port: 0 });
    const b = await startSimEngine({ id: 'deno-rep-b', host: '127.0.0.1', port: 0 });
    const c = await startSimEngine({ id: 'deno-rep-c', host: '127.0.0.1', port: 0 });
    const shared = ['--state-store', REDIS_URL, '--state-store-key-prefix', redis.prefix()];
    const flags = ['--port', '0', '--prometheus-port', '0', '--worker-urls', a.url, ...shared];
    const deno = await spawnRouter(DENO, ['run', ...PERMISSIONS, ENTRY, ...flags], { env });
    const node = await spawnRouter(process.execPath, [await builtEntry(), ...flags]);
    try {
      const health = (await (await fetch(`${deno.url}/health`)).json()) as {
        state_store?: { connected: boolean };
      };
      expect(health.state_store?.connected).toBe(true);

      expect((await fetch(`${deno.url}/add_worker?url=${b.url}`, { method: 'POST' })).status).toBe(201);
      await eventually(async () => expect(await workerIds(node.url)).toEqual([a.url, b.url].sort()));

      expect((await fetch(`${node.url}/add_worker?url=${c.url}`, { method: 'POST' })).status).toBe(201);
      await eventually(async () => expect(await workerIds(deno.url)).toEqual([a.url, b.url, c.url].sort()));

      const chat = await chatRequest(deno.url);
      expect(chat.status).toBe(200);
      await chat.arrayBuffer();
    } finally {
      await Promise.all([deno.stop(), node.stop()]);
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });
});
