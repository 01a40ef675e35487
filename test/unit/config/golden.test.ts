/**
 * Golden tests: command lines copied from the documentation and scripts of the three routers we
 * replace, quoted as argument arrays (program name dropped, shell quoting removed, one documented
 * line per row). Each must run unchanged. Where the source uses a shell variable, the substituted
 * value is noted.
 */

import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/core/config/errors.ts';
import { type ResolvedConfig, resolveConfig } from '../../../src/core/config/load.ts';
import type { RouterConfig } from '../../../src/core/config/schema.ts';
import { workerSpecsFromConfig } from '../../../src/core/fleet/from-config.ts';
import { pdConnector } from '../../../src/core/routing/context.ts';

function resolve(argv: readonly string[]): ResolvedConfig {
  return resolveConfig({ argv, env: {}, readTextFile: () => '{}' });
}
const run = (argv: readonly string[]): RouterConfig => resolve(argv).config;

function reject(argv: readonly string[]): ConfigError {
  try {
    resolve(argv);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error(`expected ${argv.join(' ')} to be rejected`);
}

/** vllm-project/router: README.md and docs/cli_reference.md. */
// biome-ignore format: quoted as the docs print them
const VLLM_ROUTER = {
  dataParallel: [
    '--worker-urls', 'http://worker1:8000', 'http://worker2:8000',
    '--policy', 'consistent_hash',
    '--intra-node-data-parallel-size', '8',
  ],
  pdNixl: [
    '--policy', 'consistent_hash',
    '--vllm-pd-disaggregation',
    '--prefill', 'http://127.0.0.1:8081',
    '--prefill', 'http://127.0.0.1:8082',
    '--decode', 'http://127.0.0.1:8083',
    '--decode', 'http://127.0.0.1:8084',
    '--decode', 'http://127.0.0.1:8085',
    '--decode', 'http://127.0.0.1:8086',
    '--host', '127.0.0.1',
    '--port', '8090',
    '--intra-node-data-parallel-size', '1',
  ],
  pdZmq: [
    '--policy', 'consistent_hash',
    '--vllm-pd-disaggregation',
    '--vllm-discovery-address', '0.0.0.0:30001',
    '--host', '0.0.0.0',
    '--port', '10001',
    '--prefill-policy', 'consistent_hash',
    '--decode-policy', 'consistent_hash',
  ],
  pdMooncake: [
    '--policy', 'consistent_hash',
    '--vllm-pd-disaggregation',
    '--kv-connector', 'mooncake',
    '--prefill', 'http://127.0.0.1:8081',
    '--prefill', 'http://127.0.0.1:8082',
    '--decode', 'http://127.0.0.1:8083',
    '--decode', 'http://127.0.0.1:8084',
    '--host', '127.0.0.1',
    '--port', '8090',
    '--intra-node-data-parallel-size', '1',
  ],
  pdBootstrapPorts: [ // docs/cli_reference.md
    '--vllm-pd-disaggregation',
    '--prefill', 'http://prefill-1:8000', '9000',
    '--prefill', 'http://prefill-2:8000', 'none',
    '--decode', 'http://decode-1:8001', '--decode', 'http://decode-2:8001',
    '--prefill-policy', 'cache_aware', '--decode-policy', 'power_of_two',
  ],
  auth: ['--api-key-validation-urls', 'https://codebase.helmholtz.cloud/api/v4/user'],
  metrics: [
    '--worker-urls', 'http://localhost:8080', 'http://localhost:8081',
    '--prometheus-host', '0.0.0.0',
    '--prometheus-port', '9000',
  ],
  retries: [
    '--worker-urls', 'http://localhost:8080', 'http://localhost:8081',
    '--retry-max-retries', '3',
    '--retry-initial-backoff-ms', '100',
    '--retry-max-backoff-ms', '10000',
    '--retry-backoff-multiplier', '2.0',
    '--retry-jitter-factor', '0.1',
  ],
  circuitBreaker: [
    '--worker-urls', 'http://localhost:8080', 'http://localhost:8081',
    '--cb-failure-threshold', '5',
    '--cb-success-threshold', '2',
    '--cb-timeout-duration-secs', '30',
    '--cb-window-duration-secs', '60',
  ],
  requestId: [
    '--worker-urls', 'http://localhost:8080',
    '--request-id-headers', 'x-trace-id', 'x-request-id',
  ],
  serviceDiscovery: [
    '--service-discovery',
    '--selector', 'app=vllm-worker', 'role=inference',
    '--service-discovery-namespace', 'default',
  ],
};

/** SMG: docs/getting-started/pd-disaggregation.md, docs/configuration/resilience.md, load balancing. */
// biome-ignore format: quoted as the docs print them
const SMG = {
  pdMultipleWorkers: [
    '--pd-disaggregation',
    '--prefill', 'http://prefill1:8000', '9001',
    '--prefill', 'http://prefill2:8000', '9002',
    '--decode', 'http://decode1:8001',
    '--decode', 'http://decode2:8001',
    '--prefill-policy', 'cache_aware',
    '--decode-policy', 'power_of_two',
  ],
  consistentHashing: ['--policy', 'consistent_hashing', '--worker-urls', 'http://w1:8000', 'http://w2:8000'],
  highAvailability: [
    '--worker-urls', 'http://w1:8000,http://w2:8000,http://w3:8000',
    '--retry-max-retries', '3',
    '--retry-initial-backoff-ms', '100',
    '--cb-failure-threshold', '5',
    '--cb-timeout-duration-secs', '30',
    '--health-check-interval-secs', '30',
    '--shutdown-grace-period-secs', '180',
  ],
  batchProcessing: [
    '--worker-urls', 'http://worker:8000',
    '--retry-max-retries', '10',
    '--retry-initial-backoff-ms', '500',
    '--retry-max-backoff-ms', '60000',
    '--cb-failure-threshold', '20',
    '--request-timeout-secs', '7200',
    '--queue-timeout-secs', '300',
    '--shutdown-grace-period-secs', '600',
  ],
  queue: ['--max-concurrent-requests', '100', '--queue-size', '200', '--queue-timeout-secs', '30'],
  fastHealth: ['--health-check-interval-secs', '10', '--health-failure-threshold', '2', '--health-check-timeout-secs', '3'],
  // The SMG part of the router_args alias test (its --sticky-sessions family is not ours).
  aliases: ['--cache-match-threshold', '0.6', '--spill-abs-threshold', '8', '--spill-rel-threshold', '1.2'],
};

/** vLLM production-stack: src/vllm_router/README.md, router/perf-test.sh, the verify-router skill. */
// biome-ignore format: quoted as the docs print them
const PRODUCTION_STACK = {
  retries: [
    '--port', '8000',
    '--service-discovery', 'static',
    '--static-backends', 'http://localhost:9001,http://localhost:9002',
    '--static-models', 'facebook/opt-125m,facebook/opt-125m',
    '--routing-logic', 'roundrobin',
    '--enable-retries',
    '--max-retries', '5',
    '--initial-backoff-ms', '100',
    '--max-backoff-ms', '60000',
    '--backoff-multiplier', '2.0',
    '--jitter-factor', '0.1',
  ],
  session: [ // router/perf-test.sh, with $1 = 8080
    '--port', '8080',
    '--service-discovery', 'static',
    '--static-backends', 'http://localhost:9004,http://localhost:9001,http://localhost:9002,http://localhost:9003',
    '--static-models', 'fake_model_name,fake_model_name,fake_model_name,fake_model_name',
    '--engine-stats-interval', '10',
    '--log-stats',
    '--routing-logic', 'session',
    '--session-key', 'x-user-id',
  ],
  minimal: [
    '--port', '18800',
    '--routing-logic', 'roundrobin', '--service-discovery', 'static',
    '--static-backends', 'http://127.0.0.1:18801', '--static-models', 'test-model',
  ],
  // A benchmark launcher, with ${BACKENDS[*]} and $MODEL substituted.
  failover: [
    '--host', '127.0.0.1', '--port', '9003',
    '--service-discovery', 'static',
    '--static-backends', 'http://127.0.0.1:8000,http://127.0.0.1:8001',
    '--static-models', 'Qwen/Qwen3-8B,Qwen/Qwen3-8B',
    '--routing-logic', 'roundrobin',
    '--engine-stats-interval', '0.25',
    '--max-instance-failover-reroute-attempts', '1',
  ],
};

describe('vllm-project/router', () => {
  it('standard data-parallel routing', () => {
    const config = run(VLLM_ROUTER.dataParallel);
    expect(config.workers).toMatchObject({ urls: ['http://worker1:8000', 'http://worker2:8000'], dpSize: 8 });
    expect(config.policy.name).toBe('consistent_hash');
  });

  it('prefill/decode disaggregation with static NIXL workers', () => {
    const config = run(VLLM_ROUTER.pdNixl);
    expect(config.pd).toMatchObject({
      enabled: true,
      prefill: [
        { url: 'http://127.0.0.1:8081', bootstrapPort: null },
        { url: 'http://127.0.0.1:8082', bootstrapPort: null },
      ],
      decode: [
        'http://127.0.0.1:8083',
        'http://127.0.0.1:8084',
        'http://127.0.0.1:8085',
        'http://127.0.0.1:8086',
      ],
    });
    expect(pdConnector(config)).toBe('nixl'); // the default
    expect(config.server).toMatchObject({ host: '127.0.0.1', port: 8090 });
    expect(config.workers.dpSize).toBe(1);
  });

  it('prefill/decode with vLLM ZMQ discovery (NCCL)', () => {
    const config = run(VLLM_ROUTER.pdZmq);
    expect(config.pd).toMatchObject({
      enabled: true,
      discoveryAddress: '0.0.0.0:30001',
      prefill: [],
      decode: [],
    });
    expect(config.policy).toMatchObject({
      name: 'consistent_hash',
      prefill: 'consistent_hash',
      decode: 'consistent_hash',
    });
    expect(config.server).toMatchObject({ host: '0.0.0.0', port: 10001 });
  });

  it('prefill/decode with the Mooncake connector', () => {
    const config = run(VLLM_ROUTER.pdMooncake);
    expect(config.pd.kvConnector).toBe('mooncake');
    expect(config.pd.prefill.map((p) => p.url)).toEqual(['http://127.0.0.1:8081', 'http://127.0.0.1:8082']);
  });

  it('static PD workers with bootstrap ports', () => {
    const config = run(VLLM_ROUTER.pdBootstrapPorts);
    expect(config.pd.prefill).toEqual([
      { url: 'http://prefill-1:8000', bootstrapPort: 9000 },
      { url: 'http://prefill-2:8000', bootstrapPort: null },
    ]);
    expect(config.pd.decode).toEqual(['http://decode-1:8001', 'http://decode-2:8001']);
    expect(config.policy).toMatchObject({
      name: 'cache_aware',
      prefill: 'cache_aware',
      decode: 'power_of_two',
    });
  });

  it('authentication', () => {
    expect(run(VLLM_ROUTER.auth).auth.apiKeyValidationUrls).toEqual([
      'https://codebase.helmholtz.cloud/api/v4/user',
    ]);
  });

  it('metrics', () => {
    expect(run(VLLM_ROUTER.metrics).metrics).toEqual({ host: '0.0.0.0', port: 9000 });
  });

  it('retries', () => {
    expect(run(VLLM_ROUTER.retries).retry).toMatchObject({
      maxRetries: 3,
      initialBackoffMs: 100,
      maxBackoffMs: 10000,
      backoffMultiplier: 2,
      jitterFactor: 0.1,
      disabled: false,
    });
  });

  it('circuit breakers', () => {
    expect(run(VLLM_ROUTER.circuitBreaker).circuitBreaker).toMatchObject({
      failureThreshold: 5,
      successThreshold: 2,
      timeoutDurationSecs: 30,
      windowDurationSecs: 60,
      disabled: false,
    });
  });

  it('request id headers', () => {
    expect(run(VLLM_ROUTER.requestId).server.requestIdHeaders).toEqual(['x-trace-id', 'x-request-id']);
  });

  it('Kubernetes service discovery', () => {
    expect(run(VLLM_ROUTER.serviceDiscovery).discovery).toMatchObject({
      mode: 'k8s',
      selector: ['app=vllm-worker', 'role=inference'],
      namespace: 'default',
      port: 8000,
    });
  });
});

describe('SMG', () => {
  it('PD with several SGLang workers', () => {
    expect(run(SMG.pdMultipleWorkers).pd).toMatchObject({
      enabled: true,
      prefill: [
        { url: 'http://prefill1:8000', bootstrapPort: 9001 },
        { url: 'http://prefill2:8000', bootstrapPort: 9002 },
      ],
      decode: ['http://decode1:8001', 'http://decode2:8001'],
    });
  });

  it('consistent_hashing is consistent_hash', () => {
    const config = run(SMG.consistentHashing);
    expect(config.policy.name).toBe('consistent_hash');
    expect(config.workers.urls).toEqual(['http://w1:8000', 'http://w2:8000']);
  });

  it('high availability, with comma-separated worker URLs', () => {
    const config = run(SMG.highAvailability);
    expect(config.workers.urls).toEqual(['http://w1:8000', 'http://w2:8000', 'http://w3:8000']);
    expect(config.retry).toMatchObject({ maxRetries: 3, initialBackoffMs: 100 });
    expect(config.circuitBreaker).toMatchObject({ failureThreshold: 5, timeoutDurationSecs: 30 });
    expect(config.health.intervalSecs).toBe(30);
    expect(config.server.shutdownGraceSecs).toBe(180);
  });

  it('batch processing', () => {
    const config = run(SMG.batchProcessing);
    expect(config.retry).toMatchObject({ maxRetries: 10, initialBackoffMs: 500, maxBackoffMs: 60000 });
    expect(config.server).toMatchObject({ requestTimeoutSecs: 7200, shutdownGraceSecs: 600 });
    expect(config.admission.queueTimeoutSecs).toBe(300);
  });

  it('concurrency limit and queue', () => {
    expect(run(SMG.queue).admission).toEqual({
      maxConcurrentRequests: 100,
      queueSize: 200,
      queueTimeoutSecs: 30,
    });
  });

  it('fast health detection', () => {
    expect(run(SMG.fastHealth).health).toMatchObject({
      intervalSecs: 10,
      failureThreshold: 2,
      timeoutSecs: 3,
    });
  });

  it('cache-match and spill aliases', () => {
    expect(run(SMG.aliases).policy).toMatchObject({
      cacheThreshold: 0.6,
      balanceAbsThreshold: 8,
      balanceRelThreshold: 1.2,
    });
  });

  it('retry buffer cap and dedicated health port', () => {
    expect(run(['--max-buffered-request-bytes', '4096']).retry.maxBufferedRequestBytes).toBe(4096);
    expect(run(['--max-buffered-request-bytes', '0']).retry.maxBufferedRequestBytes).toBe(0);
    expect(run(['--health-check-port', '8081']).health.port).toBe(8081);
  });
});

describe('vLLM production-stack router', () => {
  it('retry configuration example', () => {
    const config = run(PRODUCTION_STACK.retries);
    expect(config.server.port).toBe(8000);
    expect(config.discovery.mode).toBe('static');
    expect(config.workers).toMatchObject({
      urls: ['http://localhost:9001', 'http://localhost:9002'],
      models: ['facebook/opt-125m', 'facebook/opt-125m'],
    });
    expect(config.policy.name).toBe('round_robin');
    expect(config.retry).toMatchObject({
      disabled: false,
      maxRetries: 5,
      initialBackoffMs: 100,
      maxBackoffMs: 60000,
      backoffMultiplier: 2,
      jitterFactor: 0.1,
    });
  });

  it('session routing, with the statistics flags accepted and ignored', () => {
    const resolved = resolve(PRODUCTION_STACK.session);
    expect(resolved.config.workers.urls).toHaveLength(4);
    expect(resolved.config.workers.models).toHaveLength(4);
    expect(resolved.config.policy).toMatchObject({ name: 'consistent_hash', sessionKey: 'x-user-id' });
    expect(resolved.warnings).toEqual([
      '--engine-stats-interval is accepted for compatibility and ignored: engine statistics are not scraped',
      '--log-stats is accepted for compatibility and ignored: see /metrics for statistics',
    ]);
  });

  it('minimal launch', () => {
    expect(run(PRODUCTION_STACK.minimal).workers).toMatchObject({
      urls: ['http://127.0.0.1:18801'],
      models: ['test-model'],
    });
  });

  it('disaggregated prefill and prefix/KV-aware routing', () => {
    // production-stack's static PD fleet: each backend's label gives its role.
    const pd = run([
      ...['--service-discovery', 'static', '--static-backends', 'http://p:8100,http://d:8200'],
      ...['--static-models', 'm,m', '--static-model-labels', 'llama-prefill,llama-decode'],
      ...['--routing-logic', 'disaggregated_prefill'],
      ...['--prefill-model-labels', 'llama-prefill', '--decode-model-labels', 'llama-decode'],
    ]);
    expect(pd.pd).toMatchObject({
      enabled: true,
      prefillLabels: ['llama-prefill'],
      decodeLabels: ['llama-decode'],
    });
    expect(workerSpecsFromConfig(pd)).toEqual([
      { url: 'http://p:8100', models: ['m'], role: 'prefill' },
      { url: 'http://d:8200', models: ['m'], role: 'decode' },
    ]);
    expect(run(['--routing-logic', 'disaggregated_prefill_orchestrated']).pd.enabled).toBe(true);
    expect(run(['--routing-logic', 'prefixaware']).policy.name).toBe('cache_aware');
    expect(run(['--routing-logic', 'kvaware']).policy.name).toBe('cache_aware');
  });

  it('refuses the old failover flag with the migration', () => {
    const err = reject(PRODUCTION_STACK.failover);
    expect(err.exitCode).toBe(2);
    expect(err.message).toBe(
      '--max-instance-failover-reroute-attempts is not supported: use --enable-retries --max-retries 2',
    );
  });
});

describe('bad command lines fail with exit code 2 and a message naming the flag', () => {
  // biome-ignore format: one case per line
  const cases: [string[], string][] = [
    [['--worker-urls', 'http://worker1:8000', '--polcy', 'round_robin'], 'unknown flag --polcy (did you mean --policy?)'],
    [['--wroker-urls', 'http://worker1:8000'], 'unknown flag --wroker-urls (did you mean --worker-urls?)'],
    [['--port', '70000'], '--port 70000: must be an integer between 0 and 65535'],
    [['--retry-jitter-factor', '1.5'], '--retry-jitter-factor 1.5: must be between 0 and 1'],
    [['--retry-backoff-multiplier', '0.5'], '--retry-backoff-multiplier 0.5: must be a number >= 1'],
    [['--retry-initial-backoff-ms', '500', '--retry-max-backoff-ms', '100'], '--retry-initial-backoff-ms 500: must not exceed the max backoff (100 ms)'],
    [['--retry-max-retries', '0'], '--retry-max-retries 0: must be an integer >= 1'],
    [['--retry-max-retries', '2.5'], '--retry-max-retries 2.5: must be an integer >= 1'],
    [['--enable-retries', '--max-retries', '0'], '--max-retries 0: must be an integer >= 1'],
    [['--worker-urls', 'worker1:8000'], '--worker-urls worker1:8000: must be an http:// or https:// URL'],
    [['--static-backends', 'http://a,ftp://b'], '--static-backends ftp://b: must be an http:// or https:// URL'],
    [['--policy', 'least_connections'], '--policy least_connections: must be one of random, round_robin, power_of_two, consistent_hash, rendezvous_hash, cache_aware, least_loaded, sticky_least_loaded'],
    [['--prefill-policy', 'fastest'], '--prefill-policy fastest: must be one of random'],
    [['--cb-failure-threshold', '0'], '--cb-failure-threshold 0: must be an integer >= 1'],
    [['--health-success-threshold', '1.5'], '--health-success-threshold 1.5: must be an integer >= 1'],
    [['--kv-connector', 'nccl'], '--kv-connector nccl: must be one of nixl, mooncake'],
    [['--log-level', 'verbose'], '--log-level verbose: must be one of trace, debug, info, warn, error'],
    [['--prefill', 'http://p:1', '70000'], '--prefill 70000: must be an integer between 0 and 65535'],
    [['--max-instance-failover-reroute-attempts', '3'], 'use --enable-retries --max-retries 4'],
  ];
  it.each(cases)('%j', (argv, message) => {
    const err = reject(argv);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.exitCode).toBe(2);
    expect(err.message).toContain(message);
    expect(argv).toContain(err.flag);
  });
});
