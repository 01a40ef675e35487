/**
 * `vllm-edge-router` on Node: the core's command (src/core/cli.ts) with Node's I/O: flags,
 * environment (.env), config file, the demo engines (--demo), the undici-backed server, timers and
 * signals. The process exit code is the command's: 0, 1 (requests cut at shutdown), 2 (bad
 * configuration, a port in use), 130/143 (a second signal).
 */
import { readFileSync } from 'node:fs';
import pkg from '../../../package.json' with { type: 'json' };
import { runCli } from '../../core/cli.ts';
import { systemClock } from '../../core/contracts/runtime.ts';
import { readDotEnv, serveNode, startDemoEngines } from './host.ts';
import { applyV8Tuning } from './v8-tuning.ts';

applyV8Tuning();

void runCli({
  argv: process.argv.slice(2),
  env: process.env,
  readDotEnv,
  readTextFile: (path) => readFileSync(path, 'utf8'),
  stdout: (line) => void process.stdout.write(`${line}\n`),
  stderr: (line) => void process.stderr.write(`${line}\n`),
  version: pkg.version,
  // --vllm-discovery-address: P2P-NCCL workers register over ZMQ (src/adapters/p2p/registry.ts);
  // --service-discovery: pods found through the Kubernetes API (k8s-discovery.ts);
  // --state-store: replicas share the fleet through Redis (src/adapters/redis/).
  features: { p2pRegistration: true, kubernetesDiscovery: true, stateStore: true },
  serve: serveNode,
  startDemo: startDemoEngines,
  clock: systemClock,
  onSignal: (signal, handler) => void process.on(signal, handler),
  // After the log lines already batched for this turn (setImmediate runs callbacks in order).
  exit: (code) => void setImmediate(() => process.exit(code)),
});
