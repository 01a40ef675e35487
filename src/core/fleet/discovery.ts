/** Learns the models a worker serves from its OpenAI `/v1/models`. */

import type { FleetApi } from '../contracts/fleet-api.ts';
import type { Clock } from '../contracts/runtime.ts';
import type { Upstream } from '../contracts/upstream.ts';
import { readUpstreamBody } from '../upstream/body.ts';
import { engineCall } from '../upstream/engine-call.ts';

const decoder = new TextDecoder();

export interface DiscoveryOptions {
  clock: Clock;
  timeoutMs: number;
  apiKey?: string | undefined;
}

/** GET {url}/v1/models; returns the model ids, or undefined when the worker does not answer usefully. */
export async function fetchWorkerModels(
  upstream: Upstream,
  url: string,
  options: DiscoveryOptions,
): Promise<string[] | undefined> {
  const call = await engineCall(
    upstream,
    `${url}/v1/models`,
    { ...options, headers: { accept: 'application/json' } },
    async (res) => {
      const text = decoder.decode(await readUpstreamBody(res.body));
      if (res.status !== 200) return undefined;
      const data = (JSON.parse(text) as { data?: unknown }).data;
      if (!Array.isArray(data)) return undefined;
      return data.flatMap((m) =>
        typeof m === 'object' && m !== null && typeof m.id === 'string' ? [m.id as string] : [],
      );
    },
  );
  return call.ok ? call.value : undefined;
}

/** Fills in the models of every worker whose models are not known yet (once per base URL). */
export async function discoverModels(
  fleet: FleetApi,
  upstream: Upstream,
  options: DiscoveryOptions,
): Promise<void> {
  const workers = (await fleet.listWorkers()).filter((w) => w.models === null);
  const byUrl = new Map<string, string[]>();
  for (const w of workers) byUrl.set(w.url, [...(byUrl.get(w.url) ?? []), w.id]);
  await Promise.all(
    [...byUrl].map(async ([url, ids]) => {
      const models = await fetchWorkerModels(upstream, url, options);
      if (models && models.length > 0) for (const id of ids) await fleet.setWorkerModels(id, models);
    }),
  );
}
