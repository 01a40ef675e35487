/**
 * `vllm-edge-router` on Deno: the core's command (src/core/cli.ts) with Deno's I/O: flags,
 * environment (.env), config file, the demo engines, the `Deno.serve` server, timers and signals.
 *
 *   deno run --allow-net --allow-env --allow-read src/adapters/deno/main.ts [flags]
 *
 * P2P-NCCL registration (--vllm-discovery-address) loads the zeromq native addon, which needs
 * `--allow-ffi=node_modules/zeromq --allow-read=.,/etc/alpine-release` (`deno task start` grants them).
 *
 * The same flags and exit codes as the Node command (the core's parser and runCli); simulated
 * engines only with --demo. Deno-only APIs live in this folder.
 */
import pkg from '../../../package.json' with { type: 'json' };
import { runCli } from '../../core/cli.ts';
import { systemClock } from '../../core/contracts/runtime.ts';
import { onSignal, readDotEnv, serveDeno, startDemoEngines } from './host.ts';
import { batchedStdoutSink } from './log-sink.ts';

const log = batchedStdoutSink();

void runCli({
  argv: Deno.args,
  env: Deno.env.toObject(),
  readDotEnv,
  readTextFile: (path) => Deno.readTextFileSync(path),
  stdout: (line) => console.log(line),
  stderr: (line) => console.error(line),
  version: pkg.version,
  // --vllm-discovery-address: P2P-NCCL workers register over ZMQ (src/adapters/p2p/registry.ts).
  features: { p2pRegistration: true, stateStore: true },
  serve: (config) => serveDeno(config, log),
  startDemo: startDemoEngines,
  clock: systemClock,
  onSignal,
  exit: (code) => {
    // The last lines (the drain message) are still batched: written before exiting, unless the
    // log's reader has not taken them within a second.
    void log.settle(1000).then(() => Deno.exit(code));
  },
});
