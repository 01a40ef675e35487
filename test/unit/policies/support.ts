/** Shared helpers of the policy tests: worker lists, a Fleet with one policy, metric readers. */
import type { RouterConfig } from '../../../src/core/config/schema.ts';
import type { RouteResult, WorkerSpec } from '../../../src/core/contracts/fleet-api.ts';
import { Fleet } from '../../../src/core/fleet/fleet.ts';
import type { MetricsRegistry } from '../../../src/core/observability/metrics.ts';
import type { PolicyWorker } from '../../../src/core/policies/policy.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { testPolicyContext } from '../../support/policy-context.ts';

/** Mutable workers (tests set `load` and `processed` by hand). */
export interface TestWorker extends PolicyWorker {
  load: number;
  processed: number;
}

export function makeWorkers(n: number, prefix = 'w'): TestWorker[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${prefix}${i}`,
    url: `http://127.0.0.1:${8000 + i}`,
    load: 0,
    processed: 0,
  }));
}

export const urls = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => `http://127.0.0.1:${9100 + i}`);

export function makeFleet(
  policy: string,
  workers: WorkerSpec[],
  overrides: {
    settings?: Partial<RouterConfig['policy']>;
    sll?: Partial<RouterConfig['sll']>;
    clock?: FakeClock;
    seed?: number;
  } = {},
) {
  const clock = overrides.clock ?? new FakeClock();
  const policyContext = testPolicyContext({
    clock,
    seed: overrides.seed ?? 7,
    ...(overrides.settings ? { settings: overrides.settings } : {}),
    ...(overrides.sll ? { sll: overrides.sll } : {}),
  });
  const fleet = new Fleet({
    policies: { regular: policy, prefill: policy, decode: policy },
    policyContext,
    clock,
    leaseTtlMs: 600_000,
    workers,
  });
  return { fleet, clock, metrics: policyContext.metrics };
}

export function routedId(result: RouteResult): string {
  if (!result.ok) throw new Error(`expected a route, got ${result.code}`);
  return result.worker.id;
}

export function routedLease(result: RouteResult): { id: string; lease: number } {
  if (!result.ok) throw new Error(`expected a route, got ${result.code}`);
  return { id: result.worker.id, lease: result.lease };
}

/** The value of one series in the Prometheus text (0 when absent). */
export async function metricValue(
  metrics: MetricsRegistry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await metrics.render();
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    if (want.every((w) => rest.includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

/** Counts per id. */
export function tally(ids: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}
