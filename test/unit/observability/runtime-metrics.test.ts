/** Runtime metrics the adapters hand the core: rendered at scrape time, unmeasured families left out. */
import { describe, expect, it } from 'vitest';
import { MetricsRegistry } from '../../../src/core/observability/metrics.ts';
import {
  LagSamples,
  type RuntimeSample,
  registerRuntimeMetrics,
} from '../../../src/core/observability/runtime-metrics.ts';

describe('registerRuntimeMetrics', () => {
  it('renders each sample at scrape time under the process_* and vllm_router_* names, with build info', async () => {
    const metrics = new MetricsRegistry();
    let sample: RuntimeSample = {
      residentMemoryBytes: 100,
      cpuSecondsTotal: 1.5,
      startTimeSeconds: 1700000000,
      heapUsedBytes: 40,
      heapTotalBytes: 60,
      eventLoopLag: { p50: 0.001, p99: 0.02, max: 0.05 },
      openConnections: 3,
    };
    registerRuntimeMetrics(metrics, {
      runtime: 'node',
      runtimeVersion: '20.1.0',
      version: '0.1.0',
      sample: () => sample,
    });
    sample = { ...sample, residentMemoryBytes: 200, cpuSecondsTotal: 2.5, openConnections: 4 };
    const text = await metrics.render();
    expect(text).toContain(
      'vllm_router_build_info{version="0.1.0",runtime="node",runtime_version="20.1.0"} 1',
    );
    expect(text).toContain('# TYPE process_cpu_seconds_total counter');
    expect(text).toContain('process_cpu_seconds_total 2.5');
    expect(text).toContain('process_resident_memory_bytes 200');
    expect(text).toContain('process_start_time_seconds 1700000000');
    expect(text).toContain('vllm_router_heap_used_bytes 40');
    expect(text).toContain('vllm_router_heap_total_bytes 60');
    expect(text).toContain('vllm_router_event_loop_lag_p99_seconds 0.02');
    expect(text).toContain('vllm_router_event_loop_lag_max_seconds 0.05');
    expect(text).toContain('vllm_router_open_connections 4');
    // What this runtime does not measure is absent, not a misleading 0.
    expect(text).not.toContain('vllm_router_active_handles');
    expect(text).not.toContain('process_open_fds');
  });
});

describe('LagSamples', () => {
  it('gives the median, p99 and max delay since the last take, in seconds, then starts over', () => {
    const lag = new LagSamples();
    for (let i = 1; i <= 100; i++) lag.record(i);
    lag.record(-3); // a timer that fired early is no delay
    expect(lag.take()).toEqual({ p50: 0.05, p99: 0.099, max: 0.1 });
    expect(lag.take()).toEqual({ p50: 0, p99: 0, max: 0 });
  });

  it('keeps only the latest samples', () => {
    const lag = new LagSamples(4);
    for (const ms of [900, 900, 1, 2, 3, 4]) lag.record(ms);
    expect(lag.take().max).toBe(0.004);
  });
});
