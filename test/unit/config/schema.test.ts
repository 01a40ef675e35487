import { describe, expect, expectTypeOf, it } from 'vitest';
import { ConfigError } from '../../../src/core/config/errors.ts';
import {
  checkRouterConfig,
  defaultRouterConfig,
  knownKeys,
  POLICY_NAMES,
  type PolicyName,
  parseRouterConfig,
  type RouterConfig,
  type RouterConfigInput,
} from '../../../src/core/config/schema.ts';

function errorOf(raw: unknown): ConfigError {
  try {
    parseRouterConfig(raw);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('defaults', () => {
  it('fills every section from an empty object', () => {
    expect(defaultRouterConfig()).toEqual({
      server: {
        host: '127.0.0.1',
        port: 30000,
        maxPayloadSize: 536870912,
        maxBufferedBytesTotal: 268435456,
        requestTimeoutSecs: 1800,
        requestIdHeaders: ['x-request-id', 'x-correlation-id', 'x-trace-id', 'request-id'],
        corsAllowedOrigins: [],
        allowedHosts: [],
        trustedProxies: [],
        keepAliveTimeoutSecs: 75,
        shutdownDrainDelaySecs: 5,
        shutdownGraceSecs: 30,
        routedWorkerHeader: true,
      },
      workers: {
        urls: [],
        models: [],
        modelLabels: [],
        urlAllowlist: [],
        dpSize: 1,
        startupTimeoutSecs: 600,
        startupCheckIntervalSecs: 30,
      },
      pd: {
        enabled: false,
        prefill: [],
        decode: [],
        concurrentDispatch: false,
        kvHoldSecs: 30,
        bootstrapTimeoutSecs: 5,
        prefillLabels: [],
        decodeLabels: [],
      },
      policy: {
        name: 'cache_aware',
        cacheThreshold: 0.3,
        balanceAbsThreshold: 64,
        balanceRelThreshold: 1.5,
        evictionIntervalSecs: 120,
        maxTreeSize: 67108864,
        maxTreeBytes: 67108864,
      },
      sll: { sessionExpirationSecs: 7200, maxSessions: 100000, maxSessionIdBytes: 256, rebalanceRatio: 0 },
      retry: {
        maxRetries: 5,
        initialBackoffMs: 50,
        maxBackoffMs: 30000,
        backoffMultiplier: 1.5,
        jitterFactor: 0.2,
        disabled: false,
        retryableStatusCodes: [408, 429, 500, 502, 503, 504],
        maxBufferedRequestBytes: 1048576,
        budgetRatio: 0.2,
        budgetMinPerSec: 10,
      },
      circuitBreaker: {
        failureThreshold: 10,
        successThreshold: 3,
        timeoutDurationSecs: 60,
        windowDurationSecs: 120,
        disabled: false,
        capacityStatusCodes: [429],
        maxEjectionPercent: 50,
        pushbackCooldownMs: 250,
        pushbackCooldownMaxMs: 10000,
        slowFactor: 4,
        slowMarginMs: 500,
      },
      attempt: {
        streamFirstByteTimeoutSecs: 300,
        firstByteTimeoutSecs: 0,
        streamIdleTimeoutSecs: 300,
        idleTimeoutSecs: 300,
      },
      stall: { disabled: false, streamMinSecs: 5, minSecs: 30, factor: 4 },
      health: {
        failureThreshold: 3,
        successThreshold: 2,
        timeoutSecs: 5,
        intervalSecs: 60,
        endpoint: '/health',
        disabled: false,
      },
      admission: { queueSize: 100, queueTimeoutSecs: 60 },
      auth: {
        apiKeyValidationUrls: [],
        cacheTtlSecs: 300,
        negativeCacheTtlSecs: 30,
        cacheSize: 10_000,
        validationTimeoutSecs: 5,
      },
      admin: {},
      stateStore: { timeoutMs: 250, keyPrefix: 'vllm-router:' },
      discovery: {
        selector: [],
        port: 8000,
        prefillSelector: [],
        decodeSelector: [],
        bootstrapPortAnnotation: 'vllm.ai/bootstrap-port',
      },
      metrics: { host: '127.0.0.1', port: 29000 },
      log: { level: 'info', json: false },
    });
  });

  it('hands out fresh lists, so mutating one config cannot leak into the next', () => {
    const a = defaultRouterConfig();
    a.retry.retryableStatusCodes.push(418);
    a.server.requestIdHeaders.length = 0;
    const b = defaultRouterConfig();
    expect(b.retry.retryableStatusCodes).toEqual([408, 429, 500, 502, 503, 504]);
    expect(b.server.requestIdHeaders).toHaveLength(4);
  });

  it('keeps a partial section and fills the rest', () => {
    const config = parseRouterConfig({ retry: { maxRetries: 2 } });
    expect(config.retry.maxRetries).toBe(2);
    expect(config.retry.jitterFactor).toBe(0.2);
  });
});

describe('types', () => {
  it('exposes the shapes the core imports', () => {
    expectTypeOf<RouterConfig['policy']['name']>().toEqualTypeOf<PolicyName>();
    expectTypeOf<RouterConfig['policy']['prefill']>().toEqualTypeOf<PolicyName | undefined>();
    expectTypeOf<RouterConfig['pd']['prefill']>().toEqualTypeOf<
      { url: string; bootstrapPort: number | null }[]
    >();
    expectTypeOf<RouterConfig['admission']['maxConcurrentRequests']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<RouterConfig['log']['level']>().toEqualTypeOf<
      'trace' | 'debug' | 'info' | 'warn' | 'error'
    >();
    expectTypeOf<RouterConfig['discovery']['mode']>().toEqualTypeOf<'static' | 'k8s' | undefined>();
    expectTypeOf<RouterConfig['pd']['kvConnector']>().toEqualTypeOf<
      'nixl' | 'mooncake' | 'p2p_nccl' | undefined
    >();
    expectTypeOf<{ policy: { name: 'consistent_hashing' } }>().toExtend<RouterConfigInput>();
    expectTypeOf<Record<never, never>>().toExtend<RouterConfigInput>();
  });
});

describe('normalisation', () => {
  it('removes trailing slashes from URLs and lowercases header names', () => {
    const config = parseRouterConfig({
      workers: { urls: ['http://w1:8000/', 'https://w2/v1//'] },
      server: { requestIdHeaders: ['X-Request-ID'] },
      policy: { sessionKey: 'X-User-Id' },
    });
    expect(config.workers.urls).toEqual(['http://w1:8000', 'https://w2/v1']);
    const pd = parseRouterConfig({ pd: { decode: ['http://d:1/'], prefill: [{ url: 'http://p:1/' }] } });
    expect(pd.pd.decode).toEqual(['http://d:1']);
    expect(pd.pd.prefill).toEqual([{ url: 'http://p:1', bootstrapPort: null }]);
    expect(config.server.requestIdHeaders).toEqual(['x-request-id']);
    expect(config.policy.sessionKey).toBe('x-user-id');
  });

  it('reads consistent_hashing as consistent_hash everywhere a policy is named', () => {
    const config = parseRouterConfig({
      policy: { name: 'consistent_hashing', prefill: 'consistent_hashing', decode: 'consistent_hashing' },
    });
    expect([config.policy.name, config.policy.prefill, config.policy.decode]).toEqual([
      'consistent_hash',
      'consistent_hash',
      'consistent_hash',
    ]);
  });

  it('accepts every canonical policy name', () => {
    for (const name of POLICY_NAMES) expect(parseRouterConfig({ policy: { name } }).policy.name).toBe(name);
  });

  it('reads the Python log level names', () => {
    expect(parseRouterConfig({ log: { level: 'warning' } }).log.level).toBe('warn');
    expect(parseRouterConfig({ log: { level: 'critical' } }).log.level).toBe('error');
  });

  it('treats max concurrent requests <= 0 as unlimited (SMG writes -1)', () => {
    expect(
      parseRouterConfig({ admission: { maxConcurrentRequests: -1 } }).admission.maxConcurrentRequests,
    ).toBe(undefined);
    expect(
      parseRouterConfig({ admission: { maxConcurrentRequests: 8 } }).admission.maxConcurrentRequests,
    ).toBe(8);
  });

  it('uses the common request id headers when the list is empty', () => {
    expect(parseRouterConfig({ server: { requestIdHeaders: [] } }).server.requestIdHeaders).toHaveLength(4);
  });
});

describe('ranges', () => {
  const cases: [string, RouterConfigInput | Record<string, unknown>, string][] = [
    ['server.port', { server: { port: 65536 } }, 'must be an integer between 0 and 65535'],
    ['server.port', { server: { port: 80.5 } }, 'must be an integer between 0 and 65535'],
    ['server.port', { server: { port: '80' } }, 'must be an integer between 0 and 65535'],
    ['metrics.port', { metrics: { port: -1 } }, 'must be an integer between 0 and 65535'],
    ['health.port', { health: { port: 0 } }, 'must be an integer between 1 and 65535'],
    ['retry.jitterFactor', { retry: { jitterFactor: 1.5 } }, 'must be between 0 and 1'],
    ['retry.jitterFactor', { retry: { jitterFactor: -0.1 } }, 'must be between 0 and 1'],
    ['retry.backoffMultiplier', { retry: { backoffMultiplier: 0.5 } }, 'must be a number >= 1'],
    ['retry.maxRetries', { retry: { maxRetries: 0 } }, 'must be an integer >= 1'],
    ['retry.maxRetries', { retry: { maxRetries: 2.5 } }, 'must be an integer >= 1'],
    [
      'retry.retryableStatusCodes[1]',
      { retry: { retryableStatusCodes: [503, 99] } },
      'must be an integer between 100 and 599',
    ],
    [
      'circuitBreaker.failureThreshold',
      { circuitBreaker: { failureThreshold: 0 } },
      'must be an integer >= 1',
    ],
    [
      'circuitBreaker.successThreshold',
      { circuitBreaker: { successThreshold: 1.5 } },
      'must be an integer >= 1',
    ],
    ['health.failureThreshold', { health: { failureThreshold: 0 } }, 'must be an integer >= 1'],
    ['health.successThreshold', { health: { successThreshold: 0 } }, 'must be an integer >= 1'],
    ['health.intervalSecs', { health: { intervalSecs: 0 } }, 'must be a number > 0'],
    ['health.endpoint', { health: { endpoint: 'health' } }, 'must be a path starting with /'],
    ['policy.cacheThreshold', { policy: { cacheThreshold: 1.01 } }, 'must be between 0 and 1'],
    ['policy.balanceRelThreshold', { policy: { balanceRelThreshold: 0.9 } }, 'must be a number >= 1'],
    ['policy.balanceAbsThreshold', { policy: { balanceAbsThreshold: 1.5 } }, 'must be an integer >= 0'],
    ['policy.name', { policy: { name: 'fastest' } }, 'must be one of random, round_robin, power_of_two'],
    ['workers.dpSize', { workers: { dpSize: 0 } }, 'must be an integer >= 1'],
    ['workers.urls[0]', { workers: { urls: ['localhost:8000'] } }, 'must be an http:// or https:// URL'],
    ['workers.urls[0]', { workers: { urls: ['ftp://w:21'] } }, 'must be an http:// or https:// URL'],
    [
      'workers.urls[0]',
      { workers: { urls: ['http://w:1/?x=1'] } },
      'must be an http:// or https:// URL (no user:password@, query or fragment)',
    ],
    ['workers.urls', { workers: { urls: 'http://w:1' } }, 'must be a list of worker URLs'],
    [
      'pd.prefill[0].bootstrapPort',
      { pd: { prefill: [{ url: 'http://p', bootstrapPort: 70000 }] } },
      'must be an integer between 0 and 65535',
    ],
    ['pd.kvConnector', { pd: { kvConnector: 'nccl' } }, 'must be one of nixl, mooncake, p2p_nccl'],
    ['pd.discoveryAddress', { pd: { discoveryAddress: '0.0.0.0' } }, 'must be HOST:PORT'],
    ['pd.discoveryAddress', { pd: { discoveryAddress: '0.0.0.0:70000' } }, 'must be HOST:PORT'],
    ['discovery.selector[0]', { discovery: { selector: ['app'] } }, 'must be a key=value label selector'],
    ['discovery.mode', { discovery: { mode: 'consul' } }, 'must be one of static, k8s'],
    ['sll.rebalanceRatio', { sll: { rebalanceRatio: 0.5 } }, 'must be 0 (off) or a number >= 1'],
    ['sll.maxSessions', { sll: { maxSessions: 0 } }, 'must be an integer >= 1'],
    [
      'server.requestIdHeaders[0]',
      { server: { requestIdHeaders: ['x request'] } },
      'must be an HTTP header name',
    ],
    ['log.level', { log: { level: 'verbose' } }, 'must be one of trace, debug, info, warn, error'],
    ['log.json', { log: { json: 'yes' } }, 'must be true or false'],
    [
      'auth.apiKeyValidationUrls[0]',
      { auth: { apiKeyValidationUrls: ['nope'] } },
      'must be an http:// or https:// URL',
    ],
  ];
  it.each(cases)('%s rejects %j', (path, raw, message) => {
    const err = errorOf(raw);
    expect(err.exitCode).toBe(2);
    expect(err.path).toBe(path);
    expect(err.message).toContain(`${path}: ${message}`);
  });

  it('accepts the edges of each range', () => {
    const config = parseRouterConfig({
      server: { port: 0 },
      retry: { jitterFactor: 1, backoffMultiplier: 1, maxRetries: 1, initialBackoffMs: 0, maxBackoffMs: 0 },
      policy: { cacheThreshold: 0, balanceRelThreshold: 1 },
      sll: { rebalanceRatio: 0 },
      health: { port: 65535 },
    });
    expect(config.retry.jitterFactor).toBe(1);
    expect(config.server.port).toBe(0);
  });

  it('names the field with the exact message the brief asks for', () => {
    expect(errorOf({ retry: { jitterFactor: 1.5 } }).message).toBe(
      'retry.jitterFactor: must be between 0 and 1',
    );
  });

  it('lists every problem, one per line', () => {
    const err = errorOf({ server: { port: -1 }, retry: { jitterFactor: 2 } });
    expect(err.message.split('\n')).toEqual([
      'server.port: must be an integer between 0 and 65535',
      'retry.jitterFactor: must be between 0 and 1',
    ]);
  });
});

describe('cross-field checks', () => {
  it('rejects an initial backoff above the max backoff', () => {
    const err = errorOf({ retry: { initialBackoffMs: 500, maxBackoffMs: 100 } });
    expect(err.message).toBe('retry.initialBackoffMs: must not exceed the max backoff (100 ms)');
  });

  it('reports which other field is involved', () => {
    const result = checkRouterConfig({ retry: { initialBackoffMs: 500, maxBackoffMs: 100 } });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.issues[0]?.related).toEqual({
        path: 'retry.maxBackoffMs',
        message: 'must be at least the initial backoff (500 ms)',
      });
    }
  });

  it('wants one model per worker URL, or a single model for all', () => {
    const urls = ['http://a', 'http://b', 'http://c'];
    expect(parseRouterConfig({ workers: { urls, models: ['m'] } }).workers.models).toEqual(['m']);
    expect(parseRouterConfig({ workers: { urls, models: ['m1', 'm2', 'm3'] } }).workers.models).toHaveLength(
      3,
    );
    expect(errorOf({ workers: { urls, models: ['m1', 'm2'] } }).message).toBe(
      'workers.models: 2 models for 3 worker URLs: give one model per URL or a single model for all',
    );
  });
});

describe('unknown fields', () => {
  it('rejects them with a suggestion', () => {
    expect(errorOf({ server: { prot: 1 } }).message).toBe(
      'server.prot: unknown field (did you mean "port"?)',
    );
    expect(errorOf({ retyr: {} }).message).toBe('retyr: unknown field (did you mean "retry"?)');
    expect(errorOf({ pd: { prefill: [{ url: 'http://p', bootstrap: 1 }] } }).message).toBe(
      'pd.prefill[0].bootstrap: unknown field (did you mean "bootstrapPort"?)',
    );
  });

  it('rejects a config that is not an object', () => {
    expect(errorOf(42).message).toBe('config: must be an object');
  });

  it('knows the field names of every section', () => {
    expect(knownKeys([])).toContain('circuitBreaker');
    expect(knownKeys(['pd', 'prefill', 0])).toEqual(['url', 'bootstrapPort']);
    expect(knownKeys(['nope'])).toEqual([]);
  });
});
