/**
 * The command-line dialect (src/core/config/dialect.ts): production-stack spellings turn retries off
 * unless --enable-retries is given, and their retry flags are then ignored, unvalidated; the vLLM
 * Router (and SMG) spellings keep retries on by default; a vLLM Router retry flag wins on a mixed
 * command line. Also the other vLLM Router / SMG details of the command line: the kvaware warning,
 * SMG's `launch` word, the --service-discovery-port default.
 */
import { describe, expect, it } from 'vitest';
import { parseArgv } from '../../../src/core/config/argv.ts';
import { ConfigError } from '../../../src/core/config/errors.ts';
import { type ResolvedConfig, resolveConfig } from '../../../src/core/config/load.ts';

function resolve(argv: readonly string[], env: Record<string, string> = {}, file = '{}'): ResolvedConfig {
  return resolveConfig({ argv, env, readTextFile: () => file });
}

function reject(argv: readonly string[]): ConfigError {
  try {
    resolve(argv);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error(`expected ${argv.join(' ')} to be rejected`);
}

// biome-ignore format: quoted as production-stack's README prints it
const PS_MINIMAL = [
  '--service-discovery', 'static',
  '--static-backends', 'http://127.0.0.1:18801',
  '--static-models', 'test-model',
  '--routing-logic', 'roundrobin',
];

describe('production-stack command lines', () => {
  it('without --enable-retries: one attempt per request, and the dialect says why', () => {
    const resolved = resolve(PS_MINIMAL);
    expect(resolved.config.retry.disabled).toBe(true);
    expect(resolved.dialect).toEqual({
      name: 'production-stack',
      because: ['--service-discovery static', '--static-backends', '--routing-logic'],
      retries: 'off: no --enable-retries (one attempt per request)',
    });
    expect(resolved.warnings).toEqual([]);
  });

  it('--max-retries alone is ignored, with a warning', () => {
    const resolved = resolve(['--max-retries', '3']);
    expect(resolved.config.retry).toMatchObject({ disabled: true, maxRetries: 5 });
    expect(resolved.dialect.name).toBe('production-stack');
    expect(resolved.warnings).toEqual([
      '--max-retries ignored: --enable-retries is absent, and on a production-stack command line retries are ' +
        'off without it (one attempt per request; its retry flags are neither validated nor applied)',
    ]);
  });

  it('bad retry values are not validated without --enable-retries (a shared template cannot block startup)', () => {
    const resolved = resolve([
      ...PS_MINIMAL,
      '--backoff-multiplier',
      '0.5',
      '--jitter-factor',
      '7',
      '--initial-backoff-ms',
      '900',
      '--max-backoff-ms',
      '10',
      '--max-retries',
      'lots',
    ]);
    expect(resolved.config.retry).toMatchObject({
      disabled: true,
      maxRetries: 5,
      backoffMultiplier: 1.5,
      jitterFactor: 0.2,
      initialBackoffMs: 50,
      maxBackoffMs: 30_000,
    });
    expect(resolved.warnings[0]).toMatch(
      /^--backoff-multiplier, --jitter-factor, --initial-backoff-ms, --max-backoff-ms, --max-retries ignored: --enable-retries is absent/,
    );
    expect(resolve(['--backoff-multiplier', '0.5']).config.retry.backoffMultiplier).toBe(1.5);
  });

  it('with --enable-retries: retries on, --max-retries N is N attempts, the values validated', () => {
    const resolved = resolve([
      ...PS_MINIMAL,
      '--enable-retries',
      '--max-retries',
      '2',
      '--jitter-factor',
      '0.1',
    ]);
    expect(resolved.config.retry).toMatchObject({ disabled: false, maxRetries: 2, jitterFactor: 0.1 });
    expect(resolved.dialect).toMatchObject({ name: 'production-stack', retries: 'on: --enable-retries' });
    expect(resolved.dialect.because).toContain('--enable-retries');
    expect(resolved.warnings).toEqual([]);
    expect(reject(['--enable-retries', '--backoff-multiplier', '0.5']).message).toBe(
      '--backoff-multiplier 0.5: must be a number >= 1',
    );
  });

  it('--enable-retries=false is the same as leaving it out', () => {
    const resolved = resolve(['--enable-retries=false', '--max-retries', '3']);
    expect(resolved.config.retry).toMatchObject({ disabled: true, maxRetries: 5 });
    expect(resolved.warnings[0]).toMatch(/^--max-retries ignored/);
  });

  it('turns retries off over the environment and a config file too', () => {
    const resolved = resolve(
      PS_MINIMAL,
      { VLLM_ROUTER_RETRY_MAX_RETRIES: '3', VLLM_ROUTER_DISABLE_RETRIES: 'false' },
      '{"retry": {"disabled": false}}',
    );
    expect(resolved.config.retry).toMatchObject({ disabled: true, maxRetries: 3 });
  });

  it('the refusal of --max-instance-failover-reroute-attempts stays', () => {
    expect(reject([...PS_MINIMAL, '--max-instance-failover-reroute-attempts', '1']).message).toBe(
      '--max-instance-failover-reroute-attempts is not supported: use --enable-retries --max-retries 2',
    );
  });
});

describe('vLLM Router and SMG command lines', () => {
  it('keep retries on by default (5 attempts)', () => {
    const resolved = resolve(['--worker-urls', 'http://a:8000', '--policy', 'round_robin']);
    expect(resolved.config.retry).toMatchObject({ disabled: false, maxRetries: 5 });
    expect(resolved.dialect).toMatchObject({ name: 'vllm-router', because: ['no production-stack flag'] });
  });

  it('--service-discovery k8s (or the bare switch) is no production-stack marker', () => {
    expect(resolve(['--service-discovery', 'k8s']).dialect.name).toBe('vllm-router');
    expect(resolve(['--service-discovery']).config.retry.disabled).toBe(false);
  });

  it('the environment never decides the dialect', () => {
    const resolved = resolve([], {
      VLLM_ROUTER_STATIC_BACKENDS: 'http://a',
      VLLM_ROUTER_ROUTING_LOGIC: 'roundrobin',
    });
    expect(resolved.dialect.name).toBe('vllm-router');
    expect(resolved.config.retry.disabled).toBe(false);
  });

  it('a vLLM Router retry flag wins on a mixed command line', () => {
    const mixed = resolve([...PS_MINIMAL, '--retry-max-retries', '3']);
    expect(mixed.config.retry).toMatchObject({ disabled: false, maxRetries: 3 });
    expect(mixed.dialect).toEqual({
      name: 'vllm-router',
      because: ['--retry-max-retries'],
      retries:
        "on by default: vLLM Router retry flags (they win over production-stack's --service-discovery static, " +
        '--static-backends, --routing-logic)',
    });
    expect(resolve([...PS_MINIMAL, '--disable-retries']).config.retry.disabled).toBe(true);
    const aliases = resolve([...PS_MINIMAL, '--retryable-status-codes', '503', '--max-retries', '2']);
    expect(aliases.config.retry).toMatchObject({ disabled: false, maxRetries: 2 });
    expect(aliases.warnings).toEqual([]);
  });
});

describe('--routing-logic kvaware', () => {
  const WARNING =
    'routes with cache_aware: a prefix tree of the prompts this router sent to each worker, not a lookup in ' +
    "LMCache's KV cache (no LMCache controller is asked)";

  it('still maps to cache_aware, and warns what it is', () => {
    const resolved = resolve(['--routing-logic', 'kvaware']);
    expect(resolved.config.policy.name).toBe('cache_aware');
    expect(resolved.warnings).toEqual([`--routing-logic kvaware ${WARNING}`]);
    expect(resolve(['--routing-logic', 'prefixaware']).warnings).toEqual([]);
  });

  it('warns when the environment sets it too', () => {
    expect(resolve([], { VLLM_ROUTER_ROUTING_LOGIC: 'kvaware' }).warnings).toEqual([
      `VLLM_ROUTER_ROUTING_LOGIC=kvaware ${WARNING}`,
    ]);
  });
});

describe('vLLM Router / SMG details', () => {
  it("SMG's `smg launch ...`: a first word `launch` is ignored", () => {
    expect(parseArgv(['launch', '--worker-urls', 'http://a:8000']).overrides).toEqual({
      workers: { urls: ['http://a:8000'] },
    });
    expect(resolve(['launch', '--policy', 'random']).config.policy.name).toBe('random');
    expect(() => parseArgv(['--policy', 'random', 'launch'])).toThrow(/unexpected argument "launch"/);
    expect(() => parseArgv(['launch', 'launch'])).toThrow(/unexpected argument "launch"/);
  });

  it('--service-discovery-port defaults to 8000', () => {
    expect(resolve(['--service-discovery']).config.discovery.port).toBe(8000);
  });

  it('--config FILE accepts the printed `dialect` field and ignores it', () => {
    const printed = JSON.stringify({ dialect: { name: 'production-stack' }, policy: { name: 'random' } });
    const resolved = resolve(['--config', 'router.json'], {}, printed);
    expect(resolved.config.policy.name).toBe('random');
    expect(resolved.dialect.name).toBe('vllm-router');
  });
});
