/** The FleetApi contract against the Durable Object client: every call is an RPC to a FleetObject. */
import { fleetApiContract } from '../../contract/fleet-api-contract.ts';
import { freshFleet } from './helpers.ts';
import { HEALTH } from './router-config.ts';

fleetApiContract('FleetObject over RPC', {
  async create() {
    // A new object starts with the config's workers (probed at start): remove them.
    const { client } = freshFleet('contract');
    for (const w of await client.listWorkers()) await client.removeWorker(w.id);
    return client;
  },
  health: HEALTH,
});
