/** Helpers for the workerd tests: engines (controlled over their HTTP admin API) and objects. */
import { runInDurableObject, SELF } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { inject } from 'vitest';
import { poolObjectName } from '../../../src/adapters/cloudflare/bindings.ts';
import { FleetClient } from '../../../src/adapters/cloudflare/fleet-client.ts';
import type { FleetObject } from '../../../src/adapters/cloudflare/fleet-object.ts';
import type { PoolObject } from '../../../src/adapters/cloudflare/pool-object.ts';

export const engines = inject('engines');

/** The ADMIN_API_KEY secret the test Worker runs with (vitest.workers.config.ts). */
export const ADMIN_KEY = 'workerd-test-admin-key';

/** A JSON POST to the Worker. */
export const post = (body: string, path = '/v1/chat/completions', headers: Record<string, string> = {}) =>
  SELF.fetch(`http://router${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });

/** An admin call to the Worker, with the ADMIN_API_KEY bearer. */
export const admin = (url: string, init: RequestInit = {}) =>
  SELF.fetch(url, {
    ...init,
    headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${ADMIN_KEY}` },
  });

export interface EngineLogEntry {
  path: string;
  status: number | null;
  completed: boolean;
  aborted: boolean;
  tEndMs: number | null;
  tokensSent: number;
}

/** POST /admin/config with kebab-case settings, e.g. {"fail-mode": "status"}. */
export async function configureEngine(url: string, settings: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${url}/admin/config`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(settings),
  });
  if (res.status !== 200) throw new Error(`configure ${url}: ${res.status} ${await res.text()}`);
}

export async function resetEngine(url: string): Promise<void> {
  await (await fetch(`${url}/admin/reset`, { method: 'POST' })).arrayBuffer();
}

export async function engineLog(url: string): Promise<EngineLogEntry[]> {
  return (await (await fetch(`${url}/admin/log`)).json()) as EngineLogEntry[];
}

/** A fresh fleet (its own main object name, with its own pool objects) and a client for it. */
export function freshFleet(prefix: string): {
  objectName: string;
  stub: DurableObjectStub<FleetObject>;
  client: FleetClient;
  pool(model: string): DurableObjectStub<PoolObject>;
} {
  const objectName = `${prefix}-${crypto.randomUUID()}`;
  const client = new FleetClient(env.FLEET, { objectName, pools: poolNamespace() });
  return { objectName, stub: fleetStub(objectName), client, pool: (model) => poolStub(objectName, model) };
}

function poolNamespace(): NonNullable<typeof env.FLEET_POOLS> {
  if (!env.FLEET_POOLS) throw new Error('wrangler.toml binds no FLEET_POOLS');
  return env.FLEET_POOLS;
}

// The bindings type the objects by what they answer over RPC (object-base.ts); the tests also
// reach into them (runInDurableObject), so their stubs are typed by the classes here.

/** The main object named `name`. */
export function fleetStub(name: string): DurableObjectStub<FleetObject> {
  return env.FLEET.get(env.FLEET.idFromName(name)) as unknown as DurableObjectStub<FleetObject>;
}

/** The pool object of `model` for the fleet object named `fleet`. */
export function poolStub(fleet: string, model: string): DurableObjectStub<PoolObject> {
  const namespace = poolNamespace();
  const stub = namespace.get(namespace.idFromName(poolObjectName(fleet, model)));
  return stub as unknown as DurableObjectStub<PoolObject>;
}

/** Runs `fn` inside the object (its instance and state), typed as a FleetObject. */
export function inObject<R>(
  stub: DurableObjectStub<FleetObject>,
  fn: (instance: FleetObject, state: DurableObjectState) => R | Promise<R>,
): Promise<R> {
  return runInDurableObject<FleetObject, R>(stub, fn);
}

/** Runs `fn` inside a pool object (its instance and state). */
export function inPool<R>(
  stub: DurableObjectStub<PoolObject>,
  fn: (instance: PoolObject, state: DurableObjectState) => R | Promise<R>,
): Promise<R> {
  return runInDurableObject<PoolObject, R>(stub, fn);
}

/** Waits until `condition` holds (checked every 10 ms), for at most `timeoutMs` (hooks: no expect.poll). */
export async function until(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The RPC calls an object (main or pool) served so far, by method. */
export function callsOf(
  stub: DurableObjectStub<FleetObject> | DurableObjectStub<PoolObject>,
): Promise<Record<string, number>> {
  return runInDurableObject(stub, (instance: FleetObject | PoolObject) => ({ ...instance.calls }));
}

/**
 * The calls made since `was`, by method, without the objects' calls to each other (a pool
 * refreshing its copy of the registry, the main object pushing one): those are not a request's.
 */
export function made(after: Record<string, number>, was: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([method, n]) => [method, n - (was[method] ?? 0)] as const)
      .filter(([method, n]) => n > 0 && method !== 'registry' && method !== 'follow'),
  );
}

/** The object the Worker's fetch handler uses. */
export function routerFleetStub(): DurableObjectStub<FleetObject> {
  return fleetStub('fleet');
}

/** The pool object the Worker's fetch handler uses for `model`. */
export function routerPoolStub(model: string): DurableObjectStub<PoolObject> {
  return poolStub('fleet', model);
}
