/**
 * Process and runtime metrics, which only the host can measure (each runtime adapter reads them
 * with its own APIs: src/adapters/<runtime>/runtime-metrics.ts). The adapter hands
 * `registerRuntimeMetrics` a source; the core renders its sample at scrape time under runtime-neutral names (the `process_*`
 * ones Prometheus client libraries use, `vllm_router_*` for the rest), plus
 * `vllm_router_build_info{version,runtime,runtime_version} 1`. A family the runtime cannot measure
 * is left out, not shown as 0.
 */
import type { MetricsRegistry } from './metrics.ts';

/** Event-loop lag since the previous scrape (seconds). */
export interface LoopLag {
  p50: number;
  p99: number;
  max: number;
}

export interface RuntimeSample {
  residentMemoryBytes?: number;
  /** User plus system CPU time of the process since it started. */
  cpuSecondsTotal?: number;
  startTimeSeconds?: number;
  heapUsedBytes?: number;
  heapTotalBytes?: number;
  externalMemoryBytes?: number;
  eventLoopLag?: LoopLag;
  openFds?: number;
  /** Handles keeping the event loop alive (sockets, timers, ...). */
  activeHandles?: number;
  /** Client connections open on the router's listeners. */
  openConnections?: number;
}

export interface RuntimeSource {
  /** `node`, `deno`. */
  runtime: string;
  runtimeVersion: string;
  /** The router's version (package.json). */
  version: string;
  /** Called at every scrape; must be cheap and synchronous. */
  sample(): RuntimeSample;
}

type Field = Exclude<keyof RuntimeSample, 'eventLoopLag'>;

// biome-ignore format: one family per line reads as a table
const FAMILIES: readonly [Field, string, 'gauge' | 'counter', string][] = [
  ['residentMemoryBytes', 'process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes'],
  ['cpuSecondsTotal', 'process_cpu_seconds_total', 'counter', 'Total user and system CPU time spent in seconds'],
  ['startTimeSeconds', 'process_start_time_seconds', 'gauge', 'Start time of the process since the Unix epoch in seconds'],
  ['openFds', 'process_open_fds', 'gauge', 'Number of open file descriptors'],
  ['heapUsedBytes', 'vllm_router_heap_used_bytes', 'gauge', 'JavaScript heap in use, in bytes'],
  ['heapTotalBytes', 'vllm_router_heap_total_bytes', 'gauge', 'JavaScript heap allocated, in bytes'],
  ['externalMemoryBytes', 'vllm_router_external_memory_bytes', 'gauge', 'Memory of objects outside the JavaScript heap (buffers), in bytes'],
  ['activeHandles', 'vllm_router_active_handles', 'gauge', 'Handles keeping the event loop alive (sockets, timers, ...)'],
  ['openConnections', 'vllm_router_open_connections', 'gauge', 'Client connections open on the router listeners'],
];

// biome-ignore format: one family per line reads as a table
const LAG: readonly [keyof LoopLag, string, string][] = [
  ['p50', 'vllm_router_event_loop_lag_p50_seconds', 'Median event-loop delay since the previous scrape, in seconds'],
  ['p99', 'vllm_router_event_loop_lag_p99_seconds', '99th percentile event-loop delay since the previous scrape, in seconds'],
  ['max', 'vllm_router_event_loop_lag_max_seconds', 'Longest event-loop delay since the previous scrape, in seconds'],
];

/** Registers the source's families (those its first sample has) and the build info. */
export function registerRuntimeMetrics(metrics: MetricsRegistry, source: RuntimeSource): void {
  metrics
    .gauge('vllm_router_build_info', 'The router version and the runtime it runs on (always 1)', [
      'version',
      'runtime',
      'runtime_version',
    ])
    .labels(source.version, source.runtime, source.runtimeVersion)
    .set(1);
  const first = source.sample();
  const setters: ((sample: RuntimeSample) => void)[] = [];
  for (const [field, name, type, help] of FAMILIES) {
    if (first[field] === undefined) continue;
    const family = type === 'counter' ? metrics.counter(name, help) : metrics.gauge(name, help);
    const child = family.labels();
    setters.push((sample) => {
      const value = sample[field];
      if (value !== undefined) child.value = value;
    });
  }
  if (first.eventLoopLag !== undefined) {
    for (const [quantile, name, help] of LAG) {
      const child = metrics.gauge(name, help).labels();
      setters.push((sample) => {
        if (sample.eventLoopLag) child.set(sample.eventLoopLag[quantile]);
      });
    }
  }
  metrics.addCollector(() => {
    const sample = source.sample();
    for (const set of setters) set(sample);
  });
}

/**
 * Event-loop delays measured by a timer's drift (runtimes without a built-in monitor): `record`
 * each delay (ms), `take` the quantiles since the last take (seconds) and start over. Keeps the
 * last `capacity` samples.
 */
export class LagSamples {
  private readonly samples: number[] = [];
  private next = 0;

  constructor(private readonly capacity = 1024) {}

  record(delayMs: number): void {
    const delay = Math.max(0, delayMs);
    if (this.samples.length < this.capacity) this.samples.push(delay);
    else this.samples[this.next] = delay;
    this.next = (this.next + 1) % this.capacity;
  }

  take(): LoopLag {
    const sorted = this.samples.sort((a, b) => a - b);
    const at = (q: number) =>
      sorted.length === 0 ? 0 : (sorted[Math.ceil(q * sorted.length) - 1] as number);
    const lag = { p50: at(0.5) / 1000, p99: at(0.99) / 1000, max: (sorted.at(-1) ?? 0) / 1000 };
    this.samples.length = 0;
    this.next = 0;
    return lag;
  }
}
