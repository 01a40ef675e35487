/** Helpers for the workerd tests: engines (controlled over their HTTP admin API) and objects. */
import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { inject } from 'vitest';
import { FleetClient } from '../../../src/adapters/cloudflare/fleet-client.ts';
import type { FleetObject } from '../../../src/adapters/cloudflare/fleet-object.ts';

export const engines = inject('engines');

/** The ADMIN_API_KEY secret the test Worker runs with (vitest.workers.config.ts). */
export const ADMIN_KEY = 'workerd-test-admin-key';

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

/** A fresh object (its own name) and a client for it. */
export function freshFleet(prefix: string): { stub: DurableObjectStub<FleetObject>; client: FleetClient } {
  const objectName = `${prefix}-${crypto.randomUUID()}`;
  const stub = env.FLEET.get(env.FLEET.idFromName(objectName));
  return { stub, client: new FleetClient(env.FLEET, { objectName }) };
}

/** Runs `fn` inside the object (its instance and state), typed as a FleetObject. */
export function inObject<R>(
  stub: DurableObjectStub<FleetObject>,
  fn: (instance: FleetObject, state: DurableObjectState) => R | Promise<R>,
): Promise<R> {
  return runInDurableObject<FleetObject, R>(stub, fn);
}

/** The object the Worker's fetch handler uses. */
export function routerFleetStub(): DurableObjectStub<FleetObject> {
  return env.FLEET.get(env.FLEET.idFromName('fleet'));
}
