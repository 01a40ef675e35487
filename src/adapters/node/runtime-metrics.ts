/**
 * Node's runtime metrics for the core's registry (src/core/observability/runtime-metrics.ts):
 * memory and CPU time from `process`, the event-loop delay from perf_hooks'
 * `monitorEventLoopDelay` (its percentiles since the previous scrape: the histogram is reset at
 * every scrape), the active handles, the open file descriptors (Linux: /proc/self/fd), and the
 * client connections open on the router's listener (counted as they open and close, not per request).
 */
import { readdirSync } from 'node:fs';
import type { Server } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pkg from '../../../package.json' with { type: 'json' };
import type { MetricsRegistry } from '../../core/observability/metrics.ts';
import { type RuntimeSample, registerRuntimeMetrics } from '../../core/observability/runtime-metrics.ts';

/** The delay monitor's sampling resolution (ms). */
const LOOP_RESOLUTION_MS = 10;

function openFds(): number | undefined {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return undefined; // not Linux
  }
}

/** Counts the connections a listener holds open. */
function connectionCounter(server: Server): () => number {
  let open = 0;
  server.on('connection', (socket) => {
    open++;
    socket.once('close', () => open--);
  });
  return () => open;
}

/** Registers the process and runtime families; the returned function stops the delay monitor. */
export function registerNodeRuntimeMetrics(metrics: MetricsRegistry, listener?: Server): () => void {
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  const connections = listener ? connectionCounter(listener) : undefined;
  const startTimeSeconds = Math.round(Date.now() / 1000 - process.uptime());
  const sample = (): RuntimeSample => {
    const memory = process.memoryUsage();
    const cpu = process.cpuUsage();
    // Before its first sample the histogram reports NaN and a huge minimum: no delay seen yet.
    const ns = (v: number) => (Number.isFinite(v) && loop.count > 0 ? v / 1e9 : 0);
    const lag = { p50: ns(loop.percentile(50)), p99: ns(loop.percentile(99)), max: ns(loop.max) };
    loop.reset();
    return {
      residentMemoryBytes: memory.rss,
      cpuSecondsTotal: (cpu.user + cpu.system) / 1e6,
      startTimeSeconds,
      heapUsedBytes: memory.heapUsed,
      heapTotalBytes: memory.heapTotal,
      externalMemoryBytes: memory.external,
      eventLoopLag: lag,
      openFds: openFds(),
      activeHandles: process.getActiveResourcesInfo().length,
      openConnections: connections?.(),
    };
  };
  registerRuntimeMetrics(metrics, {
    runtime: 'node',
    runtimeVersion: process.versions.node,
    version: pkg.version,
    sample,
  });
  return () => loop.disable();
}
