import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/core/config/errors.ts';
import { type ResolvedConfig, resolveConfig } from '../../../src/core/config/load.ts';

type Env = Record<string, string | undefined>;

/** An in-memory file system for --config. */
function resolve(argv: string[], env: Env = {}, files: Record<string, string> = {}): ResolvedConfig {
  return resolveConfig({
    argv,
    env,
    readTextFile: (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${path}'`);
      return text;
    },
  });
}

function failure(argv: string[], env: Env = {}, files: Record<string, string> = {}): ConfigError {
  try {
    resolve(argv, env, files);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('precedence: flags > environment > ROUTER_CONFIG > --config file > defaults', () => {
  const file = JSON.stringify({
    retry: { maxRetries: 2, jitterFactor: 0.5, initialBackoffMs: 10 },
    server: { port: 1111, host: '0.0.0.0' },
    workers: { urls: ['http://file:1'] },
  });

  it('deep-merges by path: each source wins only the fields it sets', () => {
    const { config } = resolve(
      ['--config', 'router.json', '--retry-jitter-factor', '0.1'],
      { VLLM_ROUTER_RETRY_MAX_RETRIES: '7', VLLM_ROUTER_PORT: '2222' },
      { 'router.json': file },
    );
    expect(config.retry).toMatchObject({
      maxRetries: 7,
      jitterFactor: 0.1,
      initialBackoffMs: 10,
      maxBackoffMs: 30000,
    });
    expect(config.server).toMatchObject({ port: 2222, host: '0.0.0.0', requestTimeoutSecs: 1800 });
    expect(config.workers.urls).toEqual(['http://file:1']);
  });

  it('a flag beats the environment', () => {
    const { config } = resolve(['--port', '3333'], { VLLM_ROUTER_PORT: '2222' });
    expect(config.server.port).toBe(3333);
  });

  it('a list from a higher source replaces the lower one instead of appending', () => {
    const { config } = resolve(
      ['--config', 'router.json', '--worker-urls', 'http://cli:1'],
      { VLLM_ROUTER_WORKER_URLS: 'http://env:1' },
      { 'router.json': file },
    );
    expect(config.workers.urls).toEqual(['http://cli:1']);
  });

  it('ROUTER_CONFIG (Workers) sits between the environment variables and the file', () => {
    const { config } = resolve(
      ['--config', 'router.json'],
      {
        ROUTER_CONFIG: JSON.stringify({ server: { port: 4444 }, retry: { maxRetries: 3 } }),
        VLLM_ROUTER_RETRY_MAX_RETRIES: '9',
      },
      { 'router.json': file },
    );
    expect(config.server.port).toBe(4444);
    expect(config.retry.maxRetries).toBe(9);
    expect(config.server.host).toBe('0.0.0.0');
  });

  it('VLLM_ROUTER_CONFIG names the file when --config is absent', () => {
    const { config } = resolve([], { VLLM_ROUTER_CONFIG: 'router.json' }, { 'router.json': file });
    expect(config.server.port).toBe(1111);
  });

  it('nothing set: the schema defaults', () => {
    const resolved = resolve([]);
    expect(resolved.config.server.port).toBe(30000);
    expect(resolved).toMatchObject({ help: false, checkConfig: false, version: false, warnings: [] });
  });
});

describe('environment variables', () => {
  it('every flag has VLLM_ROUTER_<FLAG>; lists split on spaces or commas', () => {
    const { config } = resolve([], {
      VLLM_ROUTER_WORKER_URLS: 'http://a:1 http://b:1,http://c:1',
      VLLM_ROUTER_POLICY: 'consistent_hashing',
      VLLM_ROUTER_DISABLE_CIRCUIT_BREAKER: 'true',
      VLLM_ROUTER_LOG_JSON: '1',
      VLLM_ROUTER_RETRYABLE_STATUS_CODES: '429,503',
      VLLM_ROUTER_SELECTOR: 'app=w role=x',
      VLLM_ROUTER_STATIC_MODELS: 'm',
    });
    expect(config.workers.urls).toEqual(['http://a:1', 'http://b:1', 'http://c:1']);
    expect(config.workers.models).toEqual(['m']);
    expect(config.policy.name).toBe('consistent_hash');
    expect(config.circuitBreaker.disabled).toBe(true);
    expect(config.log.json).toBe(true);
    expect(config.retry.retryableStatusCodes).toEqual([429, 503]);
    expect(config.discovery.selector).toEqual(['app=w', 'role=x']);
  });

  it('custom flags read the same syntax as on the command line', () => {
    const { config } = resolve([], {
      VLLM_ROUTER_PREFILL: 'http://p1:8000 9000 http://p2:8000 none http://p3:8000',
      VLLM_ROUTER_SERVICE_DISCOVERY: 'static',
      VLLM_ROUTER_ROUTING_LOGIC: 'session',
      VLLM_ROUTER_ENABLE_RETRIES: 'true',
    });
    expect(config.pd.prefill).toEqual([
      { url: 'http://p1:8000', bootstrapPort: 9000 },
      { url: 'http://p2:8000', bootstrapPort: null },
      { url: 'http://p3:8000', bootstrapPort: null },
    ]);
    expect(config.discovery.mode).toBe('static');
    expect(config.policy.name).toBe('consistent_hash');
    expect(config.retry.disabled).toBe(false);
  });

  it('API_KEY_VALIDATION_URLS is comma separated; the VLLM_ROUTER_ name wins over it', () => {
    const legacy = resolve([], { API_KEY_VALIDATION_URLS: 'https://a.example/user, https://b.example/user' });
    expect(legacy.config.auth.apiKeyValidationUrls).toEqual([
      'https://a.example/user',
      'https://b.example/user',
    ]);
    const both = resolve([], {
      API_KEY_VALIDATION_URLS: 'https://a.example/user',
      VLLM_ROUTER_API_KEY_VALIDATION_URLS: 'https://c.example/user',
    });
    expect(both.config.auth.apiKeyValidationUrls).toEqual(['https://c.example/user']);
    const flag = resolve(['--api-key-validation-urls', 'https://d.example/u'], {
      API_KEY_VALIDATION_URLS: 'https://a.example/u',
    });
    expect(flag.config.auth.apiKeyValidationUrls).toEqual(['https://d.example/u']);
  });

  it("vllm-router's sticky-session variables map to sll.*", () => {
    const { config } = resolve([], {
      VLLM_ROUTER_SLL_SESSION_EXPIRATION_IN_S: '600',
      VLLM_ROUTER_SLL_MAX_SESSIONS: '50',
      VLLM_ROUTER_SLL_MAX_SESSION_ID_BYTES: '64',
      VLLM_ROUTER_SLL_ACTIVE_WINDOW_IN_S: '300',
      VLLM_ROUTER_SLL_REBALANCE_RATIO: '2',
    });
    expect(config.sll).toEqual({
      sessionExpirationSecs: 600,
      maxSessions: 50,
      maxSessionIdBytes: 64,
      activeWindowSecs: 300,
      rebalanceRatio: 2,
    });
  });

  it('empty values count as unset', () => {
    expect(resolve([], { VLLM_ROUTER_PORT: '', VLLM_ROUTER_WORKER_URLS: '  ' }).config.server.port).toBe(
      30000,
    );
  });

  it('ignores the service links Kubernetes injects for a Service named vllm-router', () => {
    const resolved = resolve([], {
      VLLM_ROUTER_PORT: 'tcp://10.0.0.7:8000',
      VLLM_ROUTER_PORT_8000_TCP: 'tcp://10.0.0.7:8000',
      VLLM_ROUTER_SERVICE_HOST: '10.0.0.7',
      VLLM_ROUTER_SERVICE_PORT: '8000',
    });
    expect(resolved.config.server.port).toBe(30000);
    expect(resolved.warnings).toEqual([
      'VLLM_ROUTER_PORT=tcp://10.0.0.7:8000 ignored: it looks like a Kubernetes service link, not a --port value',
    ]);
  });

  it('ignores the service links of other Services whose names start with vllm-router', () => {
    const resolved = resolve([], {
      VLLM_ROUTER_PROMETHEUS_PORT: 'tcp://10.0.0.8:29000',
      VLLM_ROUTER_PROMETHEUS_SERVICE_HOST: '10.0.0.8',
      VLLM_ROUTER_PROMETHEUS_SERVICE_PORT_METRICS: '29000',
      VLLM_ROUTER_PROMETHEUS_PORT_29000_TCP_ADDR: '10.0.0.8',
      VLLM_ROUTER_CACHE_PORT: 'tcp://10.0.0.9:6379',
    });
    expect(resolved.config.metrics.port).toBe(29000);
    expect(resolved.warnings).toEqual([
      'VLLM_ROUTER_PROMETHEUS_PORT=tcp://10.0.0.8:29000 ignored: it looks like a Kubernetes service link, not a --prometheus-port value',
    ]);
  });

  it('warns about unknown VLLM_ROUTER_ variables, with a suggestion', () => {
    const resolved = resolve([], { VLLM_ROUTER_WROKER_URLS: 'http://a', PATH: '/bin' });
    expect(resolved.warnings).toEqual([
      'unknown environment variable VLLM_ROUTER_WROKER_URLS ignored (did you mean VLLM_ROUTER_WORKER_URLS?)',
    ]);
  });

  it('a bad value names the variable', () => {
    const err = failure([], { VLLM_ROUTER_RETRY_JITTER_FACTOR: '1.5' });
    expect(err.message).toBe('VLLM_ROUTER_RETRY_JITTER_FACTOR=1.5: must be between 0 and 1');
    expect(err.flag).toBe('VLLM_ROUTER_RETRY_JITTER_FACTOR');
    expect(err.exitCode).toBe(2);
    expect(failure([], { VLLM_ROUTER_WORKER_URLS: 'http://a:1 nope' }).message).toBe(
      'VLLM_ROUTER_WORKER_URLS=nope: must be an http:// or https:// URL (no user:password@, query or fragment)',
    );
    expect(failure([], { VLLM_ROUTER_LOG_JSON: 'maybe' }).message).toBe(
      'VLLM_ROUTER_LOG_JSON=maybe: must be true or false',
    );
    expect(failure([], { VLLM_ROUTER_ROUTING_LOGIC: 'priority' }).message).toContain(
      'VLLM_ROUTER_ROUTING_LOGIC=priority: must be one of roundrobin',
    );
  });
});

describe('--config FILE', () => {
  it('reads the nested shape of the schema', () => {
    const text = JSON.stringify({
      workers: { dpSize: 2 },
      policy: { name: 'power_of_two' },
      pd: { prefill: [{ url: 'http://p:1', bootstrapPort: 9000 }] },
    });
    const { config } = resolve(['--config', 'router.json'], {}, { 'router.json': text });
    expect(config.workers.dpSize).toBe(2);
    expect(config.pd.enabled).toBe(true); // implied by the prefill workers
    expect(config.policy.name).toBe('power_of_two');
    expect(config.pd.prefill).toEqual([{ url: 'http://p:1', bootstrapPort: 9000 }]);
  });

  it('a bad value names the file and the field', () => {
    const err = failure(
      ['--config', 'router.json'],
      {},
      { 'router.json': '{"retry": {"jitterFactor": 1.5}}' },
    );
    expect(err.message).toBe('router.json: retry.jitterFactor: must be between 0 and 1');
    expect(err.path).toBe('retry.jitterFactor');
    expect(
      failure(['--config', 'r.json'], {}, { 'r.json': '{"workers": {"urls": ["http://a", 5]}}' }).message,
    ).toBe(
      'r.json: workers.urls[1]: must be an http:// or https:// URL (no user:password@, query or fragment)',
    );
  });

  it('an unknown field names the file, with a suggestion', () => {
    const err = failure(['--config', 'router.json'], {}, { 'router.json': '{"retry": {"maxRetry": 3}}' });
    expect(err.message).toBe('router.json: retry.maxRetry: unknown field (did you mean "maxRetries"?)');
  });

  it('invalid JSON, a non-object and an unreadable file are errors naming the file', () => {
    expect(failure(['--config', 'a.json'], {}, { 'a.json': '{"retry": ' }).message).toMatch(
      /^a\.json: invalid JSON: /,
    );
    expect(failure(['--config', 'a.json'], {}, { 'a.json': '[1, 2]' }).message).toBe(
      'a.json: must be a JSON object shaped like the configuration',
    );
    const unreadable = failure(['--config', 'missing.json']);
    expect(unreadable.message).toBe(
      "--config missing.json: cannot read the file: ENOENT: no such file or directory, open 'missing.json'",
    );
    expect(unreadable.exitCode).toBe(2);
    expect(failure(['--config', 'router.yaml']).message).toBe(
      'router.yaml: YAML config files are not supported yet; use JSON',
    );
  });

  it('ROUTER_CONFIG errors name the variable', () => {
    expect(failure([], { ROUTER_CONFIG: '{"server": {"port": -1}}' }).message).toBe(
      'ROUTER_CONFIG: server.port: must be an integer between 0 and 65535',
    );
  });
});

describe('errors from flags', () => {
  it('name the flag as typed, the value and the allowed range', () => {
    const err = failure(['--retry-jitter-factor', '1.5']);
    expect(err.message).toBe('--retry-jitter-factor 1.5: must be between 0 and 1');
    expect(err).toMatchObject({ exitCode: 2, flag: '--retry-jitter-factor', path: 'retry.jitterFactor' });
    expect(failure(['--enable-retries', '--jitter-factor', '1.5']).message).toBe(
      '--jitter-factor 1.5: must be between 0 and 1',
    );
  });

  it('blame a list element by its value', () => {
    expect(failure(['--worker-urls', 'http://a:1', 'a:1']).message).toBe(
      '--worker-urls a:1: must be an http:// or https:// URL (no user:password@, query or fragment)',
    );
  });

  it('report every bad value, one per line', () => {
    expect(failure(['--port', '-5', '--cb-failure-threshold', '0']).message.split('\n')).toEqual([
      '--port -5: must be an integer between 0 and 65535',
      '--cb-failure-threshold 0: must be an integer >= 1',
    ]);
  });

  it('cross-field: blame the field that was set, with a message that fits it', () => {
    expect(failure(['--retry-initial-backoff-ms', '50000']).message).toBe(
      '--retry-initial-backoff-ms 50000: must not exceed the max backoff (30000 ms)',
    );
    const viaMax = failure(['--retry-max-backoff-ms', '10']);
    expect(viaMax.message).toBe('--retry-max-backoff-ms 10: must be at least the initial backoff (50 ms)');
    expect(viaMax).toMatchObject({ flag: '--retry-max-backoff-ms', path: 'retry.maxBackoffMs' });
    expect(failure(['--static-backends', 'http://a,http://b', '--static-models', 'm1,m2,m3']).message).toBe(
      '--static-models m1,m2,m3: 3 models for 2 worker URLs: give one model per URL or a single model for all',
    );
  });

  it('argv syntax errors come through unchanged', () => {
    expect(failure(['--wroker-urls', 'http://a']).message).toBe(
      'unknown flag --wroker-urls (did you mean --worker-urls?)',
    );
  });
});

describe('--help, --version, --check-config', () => {
  it('--help and --version skip validation of the other sources', () => {
    const help = resolve(['--help', '--port', '99999'], { VLLM_ROUTER_PORT: 'x' });
    expect(help.help).toBe(true);
    expect(help.config.server.port).toBe(30000);
    expect(resolve(['-V']).version).toBe(true);
  });

  it('--check-config still validates', () => {
    expect(resolve(['--check-config']).checkConfig).toBe(true);
    expect(failure(['--check-config', '--port', '99999']).message).toContain('--port 99999');
  });

  it('warnings from ignored flags are passed on', () => {
    expect(resolve(['--log-stats']).warnings).toEqual([
      '--log-stats is accepted for compatibility and ignored: see /metrics for statistics',
    ]);
  });
});
