/** The FleetApi contract against the in-memory Fleet (Node and Deno use it directly). */
import { parseRouterConfig } from '../../src/core/config/schema.ts';
import { systemClock, systemRandom } from '../../src/core/contracts/runtime.ts';
import { createFleetFromConfig } from '../../src/core/fleet/from-config.ts';
import { MetricsRegistry } from '../../src/core/observability/metrics.ts';
import { fleetApiContract } from './fleet-api-contract.ts';

const config = parseRouterConfig({
  policy: { name: 'sticky_least_loaded' },
  health: { failureThreshold: 2, successThreshold: 2 },
});

fleetApiContract('in-memory Fleet', {
  create: async () =>
    createFleetFromConfig(config, {
      clock: systemClock,
      random: systemRandom,
      metrics: new MetricsRegistry(),
    }),
  health: config.health,
});
