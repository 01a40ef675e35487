/**
 * The FleetApi contract against a SharedFleet on the real Redis (--state-store): one replica,
 * connected to its own key prefix, its sync running on the real clock and far more often than by
 * default, so writes, load reports and re-reads of the registry interleave with the contract's
 * calls. None of it may change what the contract sees.
 */
import { afterEach } from 'vitest';
import { parseRouterConfig } from '../../src/core/config/schema.ts';
import { systemClock } from '../../src/core/contracts/runtime.ts';
import type { SharedFleet } from '../../src/core/fleet/shared-fleet.ts';
import { useRedis } from '../support/redis.ts';
import { fleetReplica } from '../support/replicas.ts';
import { fleetApiContract } from './fleet-api-contract.ts';

const config = parseRouterConfig({
  policy: { name: 'sticky_least_loaded' },
  health: { failureThreshold: 2, successThreshold: 2 },
});

const redis = useRedis();
const fleets: SharedFleet[] = [];
afterEach(() => {
  for (const fleet of fleets.splice(0)) fleet.sync.stop();
});

fleetApiContract('SharedFleet on Redis', {
  create: async () => {
    const { fleet } = await fleetReplica(config, await redis.store(), {
      clock: systemClock,
      sync: { flushMs: 1, syncIntervalMs: 2 },
    });
    fleets.push(fleet);
    return fleet;
  },
  health: config.health,
});
