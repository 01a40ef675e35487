/** Starts real simulated engines and a real router on loopback (port 0) for integration tests. */
import type { NodeRouter, NodeRouterOptions } from '../../src/adapters/node/server.ts';
import { startNodeRouter } from '../../src/adapters/node/server.ts';
import { parseRouterConfig, type RouterConfig } from '../../src/core/config/schema.ts';
import { startSimEngine } from '../../src/sim/node.ts';
import type { SimOptions } from '../../src/sim/types.ts';

export type RunningEngine = Awaited<ReturnType<typeof startSimEngine>>;

type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends (infer U)[] ? U[] : T[K] extends object ? DeepPartial<T[K]> : T[K];
};

export async function startEngines(
  count: number,
  options: Partial<SimOptions> = {},
): Promise<RunningEngine[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      startSimEngine({ id: `engine-${i}`, ...options, host: '127.0.0.1', port: 0 }),
    ),
  );
}

function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b)
        ? merge(b as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

/** A config for tests: loopback, ephemeral ports, quiet logs, round robin over the given URLs. */
export function testConfig(urls: string[], overrides: DeepPartial<RouterConfig> = {}): RouterConfig {
  const base = {
    server: { host: '127.0.0.1', port: 0 },
    metrics: { host: '127.0.0.1', port: 0 },
    workers: { urls },
    policy: { name: 'round_robin' },
    log: { level: 'error' },
  };
  return parseRouterConfig(merge(base, overrides as Record<string, unknown>));
}

export interface Running {
  router: NodeRouter;
  engines: RunningEngine[];
  logs: string[];
  stop(): Promise<void>;
}

export async function startStack(options: {
  engines?: number;
  engineOptions?: Partial<SimOptions>;
  config?: DeepPartial<RouterConfig>;
  router?: NodeRouterOptions;
}): Promise<Running> {
  const engines = await startEngines(options.engines ?? 2, options.engineOptions);
  const logs: string[] = [];
  const router = await startNodeRouter(
    testConfig(
      engines.map((e) => e.url),
      options.config,
    ),
    { logSink: (line) => logs.push(line), ...options.router },
  );
  return {
    router,
    engines,
    logs,
    async stop() {
      await router.close(0);
      await Promise.all(engines.map((e) => e.close()));
    },
  };
}

/** Every request the engines received (inference only), across engines. */
export function engineRequests(engines: RunningEngine[]) {
  return engines.flatMap((e) => e.engine.log);
}

/** The sum of every sample of the metric lines starting with `prefix` (a name, or a name and labels). */
export async function metricSum(url: string, prefix: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(prefix))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}
