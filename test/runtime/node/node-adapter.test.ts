/**
 * The runtime scenarios through the Node adapter, started as a real process from the bundled
 * dist/node/main.js (what `npm start`, the bin and the container run; rebuilt when src/ changed).
 */

import { builtEntry, spawnRouter } from '../router-process.ts';
import { CUT_FLAGS, describeRuntime, describeShutdownCut, SCENARIO_FLAGS } from '../scenarios.ts';

const serveFlags = ['--port', '0', '--prometheus-port', '0'];

describeRuntime('the Node adapter as a process', async (workerUrls) =>
  spawnRouter(process.execPath, [
    await builtEntry(),
    ...serveFlags,
    ...SCENARIO_FLAGS,
    '--worker-urls',
    ...workerUrls,
  ]),
);

describeShutdownCut('the Node adapter at the end of the grace period', async (workerUrls) =>
  spawnRouter(process.execPath, [
    await builtEntry(),
    ...serveFlags,
    ...CUT_FLAGS,
    '--worker-urls',
    ...workerUrls,
  ]),
);
