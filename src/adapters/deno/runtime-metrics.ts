/**
 * Deno's runtime metrics for the core's registry (src/core/observability/runtime-metrics.ts):
 * memory from `Deno.memoryUsage()`, CPU time from `node:process` (Deno's Node compatibility), open
 * file descriptors from /proc/self/fd (Linux; --allow-read), and the event-loop delay as the drift
 * of a timer: it asks to wake every SAMPLE_MS, and how late it wakes is the delay (no built-in
 * monitor on Deno). The timer is unref'd: it never keeps the process alive. Deno.serve does not
 * tell its open connections, so that family is left out.
 */
import process from 'node:process';
import pkg from '../../../package.json' with { type: 'json' };
import type { MetricsRegistry } from '../../core/observability/metrics.ts';
import {
  LagSamples,
  type RuntimeSample,
  registerRuntimeMetrics,
} from '../../core/observability/runtime-metrics.ts';

const SAMPLE_MS = 50;

function openFds(): number | undefined {
  try {
    let n = 0;
    for (const _ of Deno.readDirSync('/proc/self/fd')) n++;
    return n;
  } catch {
    return undefined; // not Linux, or no read permission
  }
}

/** Samples the timer drift until stopped. */
function driftSampler(lag: LagSamples): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const arm = () => {
    const due = performance.now() + SAMPLE_MS;
    const next = setTimeout(() => {
      lag.record(performance.now() - due);
      if (!stopped) arm();
    }, SAMPLE_MS);
    Deno.unrefTimer(next);
    timer = next;
  };
  arm();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** Registers the process and runtime families; the returned function stops the drift sampler. */
export function registerDenoRuntimeMetrics(metrics: MetricsRegistry): () => void {
  const lag = new LagSamples();
  const stop = driftSampler(lag);
  const startTimeSeconds = Math.round(performance.timeOrigin / 1000);
  const sample = (): RuntimeSample => {
    const memory = Deno.memoryUsage();
    const cpu = process.cpuUsage();
    return {
      residentMemoryBytes: memory.rss,
      cpuSecondsTotal: (cpu.user + cpu.system) / 1e6,
      startTimeSeconds,
      heapUsedBytes: memory.heapUsed,
      heapTotalBytes: memory.heapTotal,
      externalMemoryBytes: memory.external,
      eventLoopLag: lag.take(),
      openFds: openFds(),
    };
  };
  registerRuntimeMetrics(metrics, {
    runtime: 'deno',
    runtimeVersion: Deno.version.deno,
    version: pkg.version,
    sample,
  });
  return stop;
}
