/**
 * Router replicas of `npm run bench:replicas`: each a dist/node/main.js process (bench/overhead-procs.ts
 * spawns and pins it), sharing its fleet through Redis under a key prefix of its own per run
 * (`--state-store`, `--state-store-key-prefix`) or local-only without them; what the bench reads
 * from them (readiness, the store's operation counters in /metrics, the load in /workers); and the
 * deletion of a run's keys.
 */
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import { type Server, startRouter } from './overhead-procs.ts';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const STATE_STORE = process.env.STATE_STORE ?? 'redis://127.0.0.1:6379/0';
const RUN_ID = `${Date.now().toString(36)}-${randomUUID().slice(0, 8)}`;
const prefixes = new Set<string>();
let fleets = 0;

/** A fresh key prefix (one shared fleet); its keys are deleted by `deleteStoreKeys`. */
export function newKeyPrefix(): string {
  const prefix = `bench-replicas:${RUN_ID}:${fleets++}:`;
  prefixes.add(prefix);
  return prefix;
}

/** The flags that make a router a replica of the fleet under `prefix`. */
export function storeArgs(prefix: string): string[] {
  return ['--state-store', STATE_STORE, '--state-store-key-prefix', prefix];
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function getJson(url: string): Promise<{ status: number; body: unknown }> {
  try {
    const res = await fetch(url);
    const text = await res.text();
    return { status: res.status, body: text.startsWith('{') ? JSON.parse(text) : text };
  } catch {
    return { status: 0, body: undefined };
  }
}

/** Waits until the replica is ready (a healthy worker) and, with a store, connected and synced. */
export async function waitReady(server: Server, withStore: boolean): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const ready = (await getJson(`${server.url}/readiness`)).status === 200;
    const health = (await getJson(`${server.url}/health`)).body as {
      state_store?: { connected: boolean; lag_seconds: number | null };
    };
    const store = health?.state_store;
    if (ready && (!withStore || (store?.connected === true && store.lag_seconds !== null))) return;
    await pause(25);
  }
  throw new Error(`${server.name} (${server.url}) never became ready`);
}

/** `n` replicas in front of `engines`, all on CPU 0 (pinned), each ready (started one by one). */
export async function startReplicas(
  label: string,
  n: number,
  engines: string[],
  extra: string[],
  withStore: boolean,
): Promise<Server[]> {
  const replicas: Server[] = [];
  try {
    // Stopped with SIGTERM once idle: no drain delay to wait out.
    const args = [...extra, '--shutdown-drain-delay-secs', '0'];
    for (let i = 0; i < n; i++) replicas.push(await startRouter(ROOT, `${label}-r${i}`, engines, args, 0));
    await Promise.all(replicas.map((r) => waitReady(r, withStore)));
  } catch (err) {
    await Promise.all(replicas.map((r) => r.stop()));
    throw err;
  }
  return replicas;
}

/** `vllm_router_state_store_operations_total` of one replica, by operation. */
export async function storeOps(url: string): Promise<Record<string, number>> {
  const text = (await (await fetch(`${url}/metrics`)).text()).split('\n');
  const ops: Record<string, number> = {};
  for (const line of text) {
    const m = /^vllm_router_state_store_operations_total\{op="([^"]+)"\} (\S+)$/.exec(line);
    if (m) ops[m[1] as string] = Number(m[2]);
  }
  return ops;
}

/** The operations made between two readings (of one or several replicas: summed). */
export function opsBetween(before: Record<string, number>[], after: Record<string, number>[]) {
  const out: Record<string, number> = {};
  after.forEach((a, i) => {
    for (const [op, n] of Object.entries(a)) out[op] = (out[op] ?? 0) + n - (before[i]?.[op] ?? 0);
  });
  return out;
}

export const totalOf = (ops: Record<string, number>) => Object.values(ops).reduce((a, b) => a + b, 0);

/** Every worker's load as the replica reports it in `/workers` (its own in flight plus the others'). */
export async function workerLoads(url: string): Promise<number[]> {
  const { body } = await getJson(`${url}/workers`);
  const workers = (body as { workers?: { load: number }[] } | undefined)?.workers;
  if (!workers) throw new Error(`${url}/workers: no answer`);
  return workers.map((w) => w.load);
}

/** Deletes every key this run created in the store (all its fleets' prefixes). */
export async function deleteStoreKeys(): Promise<number> {
  if (prefixes.size === 0) return 0;
  const client = createClient({ url: STATE_STORE });
  await client.connect();
  let deleted = 0;
  try {
    for (const prefix of prefixes) {
      const keys: string[] = [];
      for await (const batch of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) keys.push(...batch);
      if (keys.length > 0) deleted += await client.del(keys);
    }
    prefixes.clear();
  } finally {
    await client.close();
  }
  return deleted;
}
