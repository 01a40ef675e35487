/** The runtime scenarios through the Node adapter, started as a real process (tsx, no build). */

import { spawnRouter } from '../router-process.ts';
import { describeRuntime } from '../scenarios.ts';

describeRuntime('the Node adapter as a process', (workerUrls) =>
  spawnRouter(process.execPath, [
    '--import',
    'tsx',
    'src/adapters/node/main.ts',
    '--port',
    '0',
    '--prometheus-port',
    '0',
    '--worker-urls',
    ...workerUrls,
  ]),
);
