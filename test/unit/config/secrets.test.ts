/** Secrets in the configuration are masked wherever it is printed: maskSecrets and --check-config. */
import { describe, expect, it } from 'vitest';
import { type CliIo, runCli } from '../../../src/core/cli.ts';
import { resolveConfig } from '../../../src/core/config/load.ts';
import { parseRouterConfig } from '../../../src/core/config/schema.ts';
import {
  isSecretName,
  maskSecrets,
  redactUrlCredentials,
  SECRET_MASK,
} from '../../../src/core/config/secrets.ts';

const WORKER_KEY = 'sk-worker-0123456789abcdef';
const ADMIN_KEY = 'adm-9876543210fedcba';

describe('maskSecrets', () => {
  it('replaces workers.apiKey and admin.apiKey by "***" and leaves the config itself alone', () => {
    const config = parseRouterConfig({
      workers: { urls: ['http://127.0.0.1:8001'], apiKey: WORKER_KEY },
      admin: { apiKey: ADMIN_KEY },
      policy: { name: 'consistent_hash', sessionKey: 'x-conversation-id' },
    });
    const masked = maskSecrets(config);
    expect(masked.workers.apiKey).toBe(SECRET_MASK);
    expect(masked.admin.apiKey).toBe(SECRET_MASK);
    expect(masked.workers.urls).toEqual(['http://127.0.0.1:8001']);
    expect(masked.policy.sessionKey).toBe('x-conversation-id'); // a header name, not a secret
    expect(masked.auth.apiKeyValidationUrls).toEqual([]);
    expect(JSON.stringify(masked)).not.toContain(WORKER_KEY);
    expect(JSON.stringify(masked)).not.toContain(ADMIN_KEY);
    expect(config.workers.apiKey).toBe(WORKER_KEY);
    expect(config.admin.apiKey).toBe(ADMIN_KEY);
  });

  it('keeps unset secrets unset, so the output still tells whether one is configured', () => {
    const masked = maskSecrets(parseRouterConfig({}));
    expect(masked.workers.apiKey).toBeUndefined();
    expect(masked.admin.apiKey).toBeUndefined();
    expect(masked).toEqual(parseRouterConfig({}));
  });

  it('names: keys, tokens, secrets and passwords, not session keys or validation URLs', () => {
    for (const name of ['apiKey', 'adminApiKey', 'token', 'bearerToken', 'clientSecret', 'password'])
      expect(isSecretName(name), name).toBe(true);
    for (const name of ['sessionKey', 'apiKeyValidationUrls', 'urls', 'tokens'])
      expect(isSecretName(name), name).toBe(false);
  });
});

describe('--check-config', () => {
  async function checkConfig(argv: string[], env: Record<string, string> = {}): Promise<string> {
    const out: string[] = [];
    const err: string[] = [];
    const codes: number[] = [];
    const io: CliIo = {
      argv,
      env,
      readDotEnv: () => ({ status: 'missing' }),
      readTextFile: (path) => {
        throw new Error(`no such file: ${path}`);
      },
      stdout: (line) => void out.push(line),
      stderr: (line) => void err.push(line),
      version: '0.0.0',
      serve: () => Promise.reject(new Error('--check-config never serves')),
      startDemo: () => Promise.reject(new Error('--check-config starts no demo')),
      onSignal: () => {},
      exit: (code) => void codes.push(code),
    };
    await runCli(io);
    expect(codes).toEqual([0]);
    return [...out, ...err].join('\n');
  }

  it('prints the configuration with --api-key and --admin-api-key masked', async () => {
    const printed = await checkConfig([
      '--worker-urls',
      'http://127.0.0.1:8001',
      '--api-key',
      WORKER_KEY,
      '--admin-api-key',
      ADMIN_KEY,
      '--check-config',
    ]);
    expect(printed).not.toContain(WORKER_KEY);
    expect(printed).not.toContain(ADMIN_KEY);
    const config = JSON.parse(printed) as { workers: { apiKey?: string }; admin: { apiKey?: string } };
    expect(config.workers.apiKey).toBe('***');
    expect(config.admin.apiKey).toBe('***');
  });

  it('masks keys that come from the environment too', async () => {
    const printed = await checkConfig(['--worker-urls', 'http://127.0.0.1:8001', '--check-config'], {
      VLLM_ROUTER_API_KEY: WORKER_KEY,
      VLLM_ROUTER_ADMIN_API_KEY: ADMIN_KEY,
    });
    expect(printed).not.toContain(WORKER_KEY);
    expect(printed).not.toContain(ADMIN_KEY);
    const config = JSON.parse(printed) as { workers: { apiKey?: string }; admin: { apiKey?: string } };
    expect([config.workers.apiKey, config.admin.apiKey]).toEqual(['***', '***']);
  });
});

describe('configuration errors quote no secret', () => {
  const resolveError = (argv: string[], env: Record<string, string> = {}) => {
    try {
      resolveConfig({ argv, env, readTextFile: () => '' });
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('expected a configuration error');
  };

  it('a worker URL with user:password@ is refused without echoing the password', () => {
    const flag = resolveError(['--worker-urls', 'http://user:s3cret-pass@engine:8000']);
    expect(flag).toContain('no user:password@');
    expect(flag).not.toContain('s3cret-pass');
    const env = resolveError([], { VLLM_ROUTER_WORKER_URLS: 'http://user:s3cret-pass@engine:8000' });
    expect(env).toContain('VLLM_ROUTER_WORKER_URLS');
    expect(env).not.toContain('s3cret-pass');
  });

  it('a bad key value is named by its flag, not quoted', () => {
    expect(resolveError(['--admin-api-key', '   '])).toBe(
      '--admin-api-key ***: must be a non-empty admin API key',
    );
  });

  it('redactUrlCredentials keeps the rest of the text', () => {
    expect(redactUrlCredentials('see http://a:b@h:1/x and https://h2/y')).toBe(
      'see http://***@h:1/x and https://h2/y',
    );
  });
});
