import { describe, expect, it } from 'vitest';
import { parseArgv } from '../../../src/core/config/argv.ts';
import { ConfigError } from '../../../src/core/config/errors.ts';

function argvError(argv: string[]): ConfigError {
  try {
    parseArgv(argv);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error(`expected ${argv.join(' ')} to fail`);
}

describe('list flags', () => {
  it('consume space-separated values up to the next flag', () => {
    const { overrides } = parseArgv(['--worker-urls', 'http://a', 'http://b', 'http://c', '--port', '1']);
    expect(overrides).toEqual({
      workers: { urls: ['http://a', 'http://b', 'http://c'] },
      server: { port: 1 },
    });
  });

  it('append when repeated', () => {
    const { overrides } = parseArgv([
      '--worker-urls',
      'http://a',
      '--port',
      '1',
      '--worker-urls',
      'http://b',
    ]);
    expect(overrides.workers).toEqual({ urls: ['http://a', 'http://b'] });
  });

  it('split commas too', () => {
    expect(parseArgv(['--worker-urls', 'http://a,http://b', 'http://c']).overrides.workers).toEqual({
      urls: ['http://a', 'http://b', 'http://c'],
    });
  });

  it('take a single value after =', () => {
    expect(parseArgv(['--worker-urls=http://a']).overrides.workers).toEqual({ urls: ['http://a'] });
  });

  it('may be given with no values (an explicit empty list)', () => {
    expect(parseArgv(['--cors-allowed-origins', '--port', '1']).overrides.server).toEqual({
      corsAllowedOrigins: [],
      port: 1,
    });
  });

  it('turn integer lists into numbers', () => {
    expect(parseArgv(['--retryable-status-codes', '429', '503,504']).overrides.retry).toEqual({
      retryableStatusCodes: [429, 503, 504],
    });
  });

  it('csv lists take one comma-separated token and append when repeated', () => {
    const { overrides } = parseArgv([
      '--static-backends',
      'http://a,http://b',
      '--static-backends',
      'http://c',
    ]);
    expect(overrides.workers).toEqual({ urls: ['http://a', 'http://b', 'http://c'] });
  });

  it('--worker-urls and --static-backends feed the same list', () => {
    const { overrides } = parseArgv(['--worker-urls', 'http://a', '--static-backends', 'http://b']);
    expect(overrides.workers).toEqual({ urls: ['http://a', 'http://b'] });
  });
});

describe('scalar flags', () => {
  it('take the next token or the text after =', () => {
    expect(parseArgv(['--host', '0.0.0.0', '--port=8080']).overrides.server).toEqual({
      host: '0.0.0.0',
      port: 8080,
    });
  });

  it('convert numeric text to numbers and leave the rest for the schema to judge', () => {
    expect(parseArgv(['--port', 'abc']).overrides.server).toEqual({ port: 'abc' });
    expect(parseArgv(['--retry-jitter-factor', '.5']).overrides.retry).toEqual({ jitterFactor: 0.5 });
  });

  it('accept a negative number as a value', () => {
    expect(parseArgv(['--max-concurrent-requests', '-1']).overrides.admission).toEqual({
      maxConcurrentRequests: -1,
    });
  });

  it('keep the last value when repeated', () => {
    expect(parseArgv(['--port', '1', '--port', '2']).overrides.server).toEqual({ port: 2 });
  });

  it('accept aliases', () => {
    const { overrides } = parseArgv([
      '--cache-match-threshold',
      '0.6',
      '--spill-abs-threshold',
      '8',
      '--spill-rel-threshold',
      '1.2',
      '--eviction-interval-secs',
      '60',
    ]);
    expect(overrides.policy).toEqual({
      cacheThreshold: 0.6,
      balanceAbsThreshold: 8,
      balanceRelThreshold: 1.2,
      evictionIntervalSecs: 60,
    });
  });

  it('fail when the value is missing', () => {
    const err = argvError(['--port', '--host', 'x']);
    expect(err.message).toBe('--port requires a value (PORT)');
    expect(argvError(['--host']).message).toBe('--host requires a value (HOST)');
  });
});

describe('bool flags', () => {
  it('are true when present', () => {
    expect(parseArgv(['--log-json', '--disable-retries']).overrides).toEqual({
      log: { json: true },
      retry: { disabled: true },
    });
  });

  it('accept =true and =false', () => {
    expect(parseArgv(['--log-json=false']).overrides.log).toEqual({ json: false });
    expect(parseArgv(['--disable-retries=true']).overrides.retry).toEqual({ disabled: true });
  });

  it('reject another value after =', () => {
    expect(argvError(['--log-json=maybe']).message).toBe('--log-json maybe: must be true or false');
  });

  it('do not consume the next token', () => {
    expect(argvError(['--log-json', 'true']).message).toBe(
      'unexpected argument "true" after --log-json (--log-json takes no value; write --log-json=true)',
    );
  });

  it('--enable-retries stores the opposite of retry.disabled', () => {
    expect(parseArgv(['--enable-retries']).overrides.retry).toEqual({ disabled: false });
    expect(parseArgv(['--enable-retries=false']).overrides.retry).toEqual({ disabled: true });
  });

  it('--pd-disaggregation is --vllm-pd-disaggregation', () => {
    expect(parseArgv(['--pd-disaggregation']).overrides.pd).toEqual({ enabled: true });
  });
});

describe('--prefill URL [BOOTSTRAP_PORT|none]', () => {
  it('takes the second token when it is a port or none', () => {
    const { overrides } = parseArgv([
      '--prefill',
      'http://p0:8000',
      '9000',
      '--prefill',
      'http://p1:8000',
      'NONE',
      '--prefill',
      'http://p2:8000',
      '--decode',
      'http://d:8000',
    ]);
    expect(overrides.pd).toEqual({
      prefill: [
        { url: 'http://p0:8000', bootstrapPort: 9000 },
        { url: 'http://p1:8000', bootstrapPort: null },
        { url: 'http://p2:8000', bootstrapPort: null },
      ],
      decode: ['http://d:8000'],
    });
  });

  it('accepts --prefill=URL', () => {
    expect(parseArgv(['--prefill=http://p:1', '8998']).overrides.pd).toEqual({
      prefill: [{ url: 'http://p:1', bootstrapPort: 8998 }],
    });
  });

  it('needs a URL', () => {
    expect(argvError(['--prefill', '--decode', 'http://d']).message).toBe('--prefill requires a value (URL)');
  });
});

describe('--service-discovery', () => {
  it('is a switch for Kubernetes (vllm-router)', () => {
    expect(parseArgv(['--service-discovery', '--selector', 'app=w']).overrides.discovery).toEqual({
      mode: 'k8s',
      selector: ['app=w'],
    });
  });

  it('takes static or k8s as a value (production-stack)', () => {
    expect(parseArgv(['--service-discovery', 'static']).overrides.discovery).toEqual({ mode: 'static' });
    expect(parseArgv(['--service-discovery', 'k8s']).overrides.discovery).toEqual({ mode: 'k8s' });
    expect(parseArgv(['--service-discovery=static']).overrides.discovery).toEqual({ mode: 'static' });
  });

  it('does not consume any other token', () => {
    expect(argvError(['--service-discovery', 'consul']).message).toContain('unexpected argument "consul"');
  });

  it('=false leaves discovery off', () => {
    expect(parseArgv(['--service-discovery=false']).overrides).toEqual({});
  });
});

describe('--routing-logic (production-stack)', () => {
  it.each([
    ['roundrobin', { policy: { name: 'round_robin' } }],
    ['session', { policy: { name: 'consistent_hash' } }],
    ['prefixaware', { policy: { name: 'cache_aware' } }],
    ['kvaware', { policy: { name: 'cache_aware' } }],
    ['disaggregated_prefill', { pd: { enabled: true } }],
  ])('%s', (logic, expected) => {
    expect(parseArgv(['--routing-logic', logic]).overrides).toEqual(expected);
  });

  it('rejects other values with the list of valid ones', () => {
    const err = argvError(['--routing-logic', 'priority']);
    expect(err.message).toBe(
      '--routing-logic priority: must be one of roundrobin, session, prefixaware, kvaware, disaggregated_prefill, disaggregated_prefill_orchestrated',
    );
    expect(err.flag).toBe('--routing-logic');
  });

  it('does not look values up on the object prototype', () => {
    expect(argvError(['--routing-logic', 'constructor']).message).toContain('must be one of');
  });
});

describe('meta flags', () => {
  it('--help, -h, --version, -V, --check-config, --config', () => {
    expect(parseArgv(['--help']).help).toBe(true);
    expect(parseArgv(['-h']).help).toBe(true);
    expect(parseArgv(['--version']).version).toBe(true);
    expect(parseArgv(['-V']).version).toBe(true);
    const parsed = parseArgv(['--check-config', '--config', 'router.json']);
    expect(parsed).toMatchObject({
      checkConfig: true,
      configFile: 'router.json',
      help: false,
      version: false,
    });
    expect(parsed.overrides).toEqual({});
  });

  it('a lone -- is ignored (npm start -- --port 1, deno task start -- --port 1)', () => {
    expect(parseArgv(['--', '--port', '1']).overrides).toEqual({ server: { port: 1 } });
    expect(parseArgv(['--worker-urls', 'http://a', '--', '--port', '1']).overrides).toEqual({
      workers: { urls: ['http://a'] },
      server: { port: 1 },
    });
  });
});

describe('errors', () => {
  it('unknown flag, with the nearest known flag', () => {
    const err = argvError(['--wroker-urls', 'http://a']);
    expect(err.message).toBe('unknown flag --wroker-urls (did you mean --worker-urls?)');
    expect(err.exitCode).toBe(2);
    expect(err.flag).toBe('--wroker-urls');
    expect(argvError(['--retry-max-retry', '3']).message).toBe(
      'unknown flag --retry-max-retry (did you mean --retry-max-retries?)',
    );
  });

  it('unknown flag far from any known one', () => {
    expect(argvError(['--frobnicate']).message).toBe('unknown flag --frobnicate');
    expect(argvError(['-x']).message).toBe('unknown flag -x');
  });

  it('unknown flag given with =', () => {
    expect(argvError(['--prot=1']).message).toBe('unknown flag --prot (did you mean --port?)');
  });

  it('a stray positional argument', () => {
    expect(argvError(['router.json']).message).toBe('unexpected argument "router.json"');
  });

  it('refuses --max-instance-failover-reroute-attempts with the N+1 migration', () => {
    const err = argvError(['--max-instance-failover-reroute-attempts', '3']);
    expect(err.message).toBe(
      '--max-instance-failover-reroute-attempts is not supported: use --enable-retries --max-retries 4',
    );
    expect(err.exitCode).toBe(2);
    expect(argvError(['--max-instance-failover-reroute-attempts=0']).message).toContain('--max-retries 1');
    expect(argvError(['--max-instance-failover-reroute-attempts', 'x']).message).toContain(
      '--max-retries N+1',
    );
  });
});

describe('ignored compatibility flags', () => {
  it('are consumed with their values and reported as warnings', () => {
    const parsed = parseArgv([
      '--engine-stats-interval',
      '10',
      '--log-stats',
      '--log-dir',
      '/var/log',
      '--port',
      '1',
    ]);
    expect(parsed.overrides).toEqual({ server: { port: 1 } });
    expect(parsed.warnings).toEqual([
      '--engine-stats-interval is accepted for compatibility and ignored: engine statistics are not scraped',
      '--log-stats is accepted for compatibility and ignored: see /metrics for statistics',
      '--log-dir is accepted for compatibility and ignored: logs go to stdout',
    ]);
  });
});

describe('purity', () => {
  it('does not touch its input and gives the same answer twice', () => {
    const argv = Object.freeze(['--worker-urls', 'http://a', 'http://b', '--policy', 'random']);
    const first = parseArgv(argv);
    expect(parseArgv(argv)).toEqual(first);
    expect(argv).toEqual(['--worker-urls', 'http://a', 'http://b', '--policy', 'random']);
  });

  it('records where each path came from', () => {
    const { origins } = parseArgv(['--jitter-factor', '0.1', '--worker-urls', 'http://a', 'http://b']);
    expect(origins.get('retry.jitterFactor')).toEqual({ name: '--jitter-factor', raw: '0.1' });
    expect(origins.get('workers.urls')).toEqual({ name: '--worker-urls', raw: 'http://a http://b' });
  });
});
