/**
 * What a starting replica's flags contribute to the shared registry, as the Durable Object does on
 * a redeploy. The store remembers the worker ids the configuration listed: a replica whose flags
 * list ids the store has not seen adds those workers, one whose flags dropped ids removes those;
 * admin changes stand otherwise (a worker removed through the admin API is not brought back by a
 * restart with the same flags, and one added through it is not dropped).
 */
import type { SharedWorker } from '../contracts/shared-store.ts';
import type { WorkerView } from './registry-view.ts';
import { type StoreLink, UNAVAILABLE } from './store-link.ts';

export function sharedWorker(view: WorkerView): SharedWorker {
  const { id, spec, models, modelsStatic, draining } = view;
  return { id, spec, models, modelsStatic, draining };
}

/** 'unavailable': try again at the next resync; 'changed': the registry was written. */
export async function seedRegistry(
  link: StoreLink,
  configured: readonly WorkerView[],
): Promise<'unavailable' | 'changed' | 'same'> {
  const { store } = link;
  const before = await link.call('registry_seed', () => store.readConfigured());
  if (before === UNAVAILABLE) return 'unavailable';
  const ids = configured.map((v) => v.id).sort();
  const known = new Set(before ?? []);
  const listed = new Set(ids);
  if (before !== undefined && known.size === listed.size && ids.every((id) => known.has(id))) return 'same';
  for (const view of configured) {
    if (known.has(view.id)) continue;
    const put = await link.call('registry_seed', () => store.putWorker(sharedWorker(view), true));
    if (put === UNAVAILABLE) return 'unavailable';
  }
  for (const id of known) {
    if (listed.has(id)) continue;
    if ((await link.call('registry_seed', () => store.deleteWorker(id))) === UNAVAILABLE)
      return 'unavailable';
  }
  const wrote = await link.call('registry_seed', () => store.writeConfigured(ids));
  return wrote === UNAVAILABLE ? 'unavailable' : 'changed';
}
