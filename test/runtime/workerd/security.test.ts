/**
 * Security inside workerd: the Worker's admin API takes the ADMIN_API_KEY secret and is off without
 * it (no peer address on Workers, so no loopback exception); client auth (validation URLs, the
 * SHA-256 cache on Web Crypto, the fetch transport) behaves as on Node and Deno.
 */
import { createExecutionContext, SELF, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { readRouterConfig } from '../../../src/adapters/cloudflare/bindings.ts';
import worker from '../../../src/adapters/cloudflare/worker.ts';
import { parseRouterConfig } from '../../../src/core/config/schema.ts';
import { createRouter } from '../../../src/core/router.ts';
import { fetchUpstream } from '../../../src/core/upstream/fetch-upstream.ts';
import { ADMIN_KEY, engines } from './helpers.ts';
import { GOOD_CLIENT_TOKEN } from './router-config.ts';

describe('the admin API on Workers', () => {
  it('needs the ADMIN_API_KEY secret as a bearer; any host name the Worker is routed on works', async () => {
    expect((await SELF.fetch('http://router.example.com/get_loads')).status).toBe(401);
    const wrong = await SELF.fetch('http://router.example.com/get_loads', {
      headers: { authorization: 'Bearer not-the-key' },
    });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).not.toContain(ADMIN_KEY);
    const right = await SELF.fetch('http://router.example.com/get_loads', {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(right.status).toBe(200);
  });

  it('is off without the secret, with a 403 naming it', async () => {
    const { ADMIN_API_KEY: _secret, ...withoutSecret } = env;
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request('http://router/workers', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'http://attacker.example' }),
      }),
      withoutSecret as typeof env,
      ctx,
    );
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('ADMIN_API_KEY');
    await waitOnExecutionContext(ctx);
  });

  it('reads ADMIN_API_KEY and API_KEY_VALIDATION_URLS from the bindings', () => {
    const config = readRouterConfig({
      ROUTER_CONFIG: '{"workers":{"urls":["http://a.example"]}}',
      ADMIN_API_KEY: 'k',
      API_KEY_VALIDATION_URLS: 'http://v1.example/check, http://v2.example/check',
    });
    expect(config.admin.apiKey).toBe('k');
    expect(config.auth.apiKeyValidationUrls).toEqual(['http://v1.example/check', 'http://v2.example/check']);
  });
});

describe('client auth in workerd', () => {
  const build = async () => {
    const config = parseRouterConfig({
      workers: { urls: [engines.a] },
      health: { disabled: true },
      auth: { apiKeyValidationUrls: [engines.validator] },
      log: { level: 'error' },
    });
    const router = createRouter(config, { upstream: fetchUpstream(), logSink: () => {} });
    await router.start(async () => {});
    return router;
  };
  const chat = (token?: string) =>
    new Request('http://router/v1/chat/completions', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      },
      body: JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('answers 401 without a token or with a refused one, and serves an accepted one', async () => {
    const router = await build();
    const none = await router.app.fetch(chat());
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('Bearer');
    expect((await router.app.fetch(chat('wrong'))).status).toBe(401);
    const ok = await router.app.fetch(chat(GOOD_CLIENT_TOKEN));
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { object: string }).object).toBe('chat.completion');
    expect((await router.app.fetch(new Request('http://router/liveness'))).status).toBe(200);
  });
});
