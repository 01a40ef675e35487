/**
 * Client auth on its own: a Hono app with only the auth middleware in front of a few routes, a fake
 * clock, and validators that are functions behind the upstream contract (answering a status,
 * refusing the connection, hanging until aborted, or waiting for the test to let them answer).
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { parseRouterConfig } from '../../../src/core/config/schema.ts';
import {
  StaleConnectionError,
  type UpstreamRequest,
  type UpstreamResponse,
} from '../../../src/core/contracts/upstream.ts';
import { createClientAuth } from '../../../src/core/http/client-auth.ts';
import { tokenKey } from '../../../src/core/http/token-cache.ts';
import { createLogger } from '../../../src/core/observability/logger.ts';
import { MetricsRegistry } from '../../../src/core/observability/metrics.ts';
import { FakeClock } from '../../support/fake-clock.ts';

const GOOD = 'glpat-good-token-1234';
const BAD = 'glpat-bad-token-5678';

type Validator = (req: UpstreamRequest) => Promise<UpstreamResponse>;

function answer(status: number, headers: Record<string, string> = {}): UpstreamResponse {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"id":1}'));
      controller.close();
    },
  });
  return { status, headers, body };
}

/** Accepts GOOD with 200, refuses anything else with 401. */
const acceptsGood: Validator = async (req) =>
  answer(req.headers.authorization === `Bearer ${GOOD}` ? 200 : 401);

const always =
  (status: number): Validator =>
  async () =>
    answer(status);

const refused: Validator = async () => {
  const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
  throw new TypeError('fetch failed', { cause });
};

/** Never answers; rejects with the signal's reason once the call is aborted. */
const hangs: Validator = (req) =>
  new Promise((_, reject) => {
    req.signal.addEventListener('abort', () => reject(req.signal.reason), { once: true });
  });

function setup(
  validators: Record<string, Validator>,
  auth: Record<string, unknown> = {},
): {
  app: Hono;
  clock: FakeClock;
  calls: UpstreamRequest[];
  logs: string[];
  metrics: MetricsRegistry;
  validators: Record<string, Validator>;
  cacheKeys(): string[];
  waiting(): number;
  get(path?: string, token?: string | null, init?: RequestInit): Promise<Response>;
  checks(result: string): Promise<number>;
} {
  const config = parseRouterConfig({
    auth: { apiKeyValidationUrls: Object.keys(validators), ...auth },
  });
  const clock = new FakeClock();
  const calls: UpstreamRequest[] = [];
  const logs: string[] = [];
  const metrics = new MetricsRegistry();
  const current = { ...validators };
  const logger = createLogger({ level: 'debug', json: false, sink: (l) => logs.push(l), now: () => 0 });
  const clientAuth = createClientAuth(config, {
    clock,
    metrics,
    logger,
    upstream: (req) => {
      calls.push(req);
      const v = current[req.url];
      if (!v) throw new Error(`no validator at ${req.url}`);
      return v(req);
    },
  });
  if (!clientAuth) throw new Error('client auth is off');
  const app = new Hono();
  app.use(
    '*',
    clientAuth.middleware((path) => path === '/liveness'),
  );
  app.get('/liveness', (c) => c.text('alive'));
  app.get('/v1/models', (c) => c.json({ data: [] }));
  app.options('/v1/models', (c) => c.body(null, 204));
  return {
    app,
    clock,
    calls,
    logs,
    metrics,
    validators: current,
    cacheKeys: () => clientAuth.cache.keys(),
    waiting: () => clientAuth.waiting(),
    get: (path = '/v1/models', token: string | null = GOOD, init: RequestInit = {}) =>
      Promise.resolve(
        app.request(path, {
          ...init,
          headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...init.headers },
        }),
      ),
    async checks(result) {
      const line = (await metrics.render())
        .split('\n')
        .find((l) => l.startsWith(`vllm_router_auth_checks_total{result="${result}"}`));
      return line === undefined ? 0 : Number(line.split(' ').at(-1));
    },
  };
}

type ErrorBody = { error: { message: string; type: string; code: string; param: string | null } };

/** Lets pending work run until `condition` holds (no time passes on the fake clock). */
async function waitFor(condition: () => boolean, what: string): Promise<void> {
  const until = performance.now() + 5_000;
  while (!condition() && performance.now() < until) await new Promise((r) => setImmediate(r));
  expect(condition(), what).toBe(true);
}

describe('client auth: the Authorization header', () => {
  it('is off without validation URLs', () => {
    const config = parseRouterConfig({});
    const deps = { clock: new FakeClock(), metrics: new MetricsRegistry() } as never;
    expect(createClientAuth(config, deps)).toBeUndefined();
  });

  it('a missing or malformed header gets 401 in the OpenAI shape, without asking the validator', async () => {
    const s = setup({ 'http://v.test/user': acceptsGood });
    for (const authorization of [undefined, 'Basic Zm9vOmJhcg==', 'Bearer', 'Bearer ', 'Bearer a b', GOOD]) {
      const res = await s.app.request('/v1/models', {
        headers: authorization === undefined ? {} : { authorization },
      });
      expect(res.status, String(authorization)).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      const body = (await res.json()) as ErrorBody;
      expect(body.error).toMatchObject({
        type: 'authentication_error',
        code: 'invalid_api_key',
        param: null,
      });
    }
    expect(
      (await s.app.request('/v1/models', { headers: { authorization: `Bearer ${'x'.repeat(5000)}` } }))
        .status,
    ).toBe(401);
    expect(s.calls).toHaveLength(0);
    expect(await s.checks('missing')).toBe(7);
  });

  it('a valid token passes; the validator gets a GET with only Authorization and Accept', async () => {
    const s = setup({ 'http://v.test/user': acceptsGood });
    const res = await s.get('/v1/models', GOOD, { headers: { cookie: 'session=1', 'x-other': 'y' } });
    expect(res.status).toBe(200);
    expect(s.calls).toHaveLength(1);
    const call = s.calls[0]!;
    expect(call.method).toBe('GET');
    expect(call.url).toBe('http://v.test/user');
    expect(call.body).toBeNull();
    expect(call.headers).toEqual({ authorization: `Bearer ${GOOD}`, accept: 'application/json' });
    // The scheme is case-insensitive.
    expect((await s.app.request('/v1/models', { headers: { authorization: `bearer ${GOOD}` } })).status).toBe(
      200,
    );
  });

  it('open paths and CORS preflights pass without a token', async () => {
    const s = setup({ 'http://v.test/user': acceptsGood });
    expect((await s.get('/liveness', null)).status).toBe(200);
    const preflight = await s.get('/v1/models', null, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
    });
    expect(preflight.status).toBe(204);
    // An OPTIONS that is not a preflight is checked like anything else.
    expect((await s.get('/v1/models', null, { method: 'OPTIONS' })).status).toBe(401);
    expect(s.calls).toHaveLength(0);
  });
});

describe('client auth: the verdict cache', () => {
  it('remembers an accepted token for --api-key-cache-ttl-secs, then asks again', async () => {
    const s = setup({ 'http://v.test/user': acceptsGood }, { cacheTtlSecs: 60 });
    expect((await s.get()).status).toBe(200);
    s.clock.advance(59_999);
    expect((await s.get()).status).toBe(200);
    expect(s.calls).toHaveLength(1);
    expect(await s.checks('cached_valid')).toBe(1);
    s.clock.advance(1);
    expect((await s.get()).status).toBe(200);
    expect(s.calls).toHaveLength(2);
    expect(await s.checks('valid')).toBe(2);
  });

  it('remembers a refused token for --api-key-negative-cache-ttl-secs, then asks again', async () => {
    const s = setup({ 'http://v.test/user': acceptsGood }, { negativeCacheTtlSecs: 10 });
    const res = await s.get('/v1/models', BAD);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(((await res.json()) as ErrorBody).error.code).toBe('invalid_api_key');
    s.clock.advance(9_999);
    expect((await s.get('/v1/models', BAD)).status).toBe(401);
    expect(s.calls).toHaveLength(1);
    expect(await s.checks('cached_invalid')).toBe(1);
    s.clock.advance(1);
    // Meanwhile the validator learned the token: the next check asks and lets it in.
    s.validators['http://v.test/user'] = always(200);
    expect((await s.get('/v1/models', BAD)).status).toBe(200);
    expect(s.calls).toHaveLength(2);
  });

  it('keys entries by the SHA-256 of the token and keeps at most --api-key-cache-size of them', async () => {
    const s = setup({ 'http://v.test/user': always(200) }, { cacheSize: 2 });
    for (const t of ['token-a', 'token-b', 'token-c'])
      expect((await s.get('/v1/models', t)).status).toBe(200);
    expect(s.cacheKeys()).toEqual([await tokenKey('token-b'), await tokenKey('token-c')]);
    for (const key of s.cacheKeys()) expect(key).toMatch(/^[0-9a-f]{64}$/);
    // token-a was evicted: it is asked about again; token-c is not.
    expect((await s.get('/v1/models', 'token-a')).status).toBe(200);
    expect((await s.get('/v1/models', 'token-c')).status).toBe(200);
    expect(s.calls.map((c) => c.headers.authorization)).toEqual([
      'Bearer token-a',
      'Bearer token-b',
      'Bearer token-c',
      'Bearer token-a',
    ]);
  });

  it('concurrent checks of one token share one validation round', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const s = setup({
      'http://v.test/user': async (req) => {
        await gate;
        return acceptsGood(req);
      },
    });
    const pending = Array.from({ length: 10 }, () => s.get());
    const refusedOnes = Array.from({ length: 5 }, () => s.get('/v1/models', BAD));
    await waitFor(() => s.waiting() === 15, 'all 15 checks waiting for a validation round');
    expect(s.calls, 'one validator call per distinct token').toHaveLength(2);
    release();
    expect((await Promise.all(pending)).map((r) => r.status)).toEqual(Array(10).fill(200));
    expect((await Promise.all(refusedOnes)).map((r) => r.status)).toEqual(Array(5).fill(401));
    expect(s.calls).toHaveLength(2);
    expect(await s.checks('valid')).toBe(10);
    expect(await s.checks('invalid')).toBe(5);
  });
});

describe('client auth: a validator that cannot be asked', () => {
  const unavailable = async (res: Response) => {
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    const body = (await res.json()) as ErrorBody;
    expect(body.error).toMatchObject({ type: 'service_unavailable_error', code: 'auth_unavailable' });
    expect(body.error.message).not.toContain(GOOD);
  };

  it.each([
    ['answers 500', always(500)],
    ['answers 503', always(503)],
    ['rate limits (429)', always(429)],
    ['refuses the connection', refused],
  ])('%s: 503, nothing remembered, the token works once the validator is back', async (_name, down) => {
    const s = setup({ 'http://v.test/user': down });
    await unavailable(await s.get());
    await unavailable(await s.get());
    expect(s.calls).toHaveLength(2);
    expect(s.cacheKeys()).toEqual([]);
    expect(await s.checks('unavailable')).toBe(2);
    s.validators['http://v.test/user'] = acceptsGood;
    expect((await s.get()).status).toBe(200);
    expect(await s.checks('valid')).toBe(1);
  });

  it('times out after --api-key-validation-timeout-secs: 503, then works once the validator answers', async () => {
    const s = setup({ 'http://v.test/user': hangs }, { validationTimeoutSecs: 2 });
    const res = s.get();
    await waitFor(() => s.calls.length === 1, 'the validator was called');
    s.clock.advance(1_999);
    await new Promise((r) => setImmediate(r));
    expect(s.calls[0]!.signal.aborted).toBe(false);
    s.clock.advance(1);
    await unavailable(await res);
    expect(s.calls[0]!.signal.aborted).toBe(true);
    expect(s.clock.pendingTimers).toBe(0);
    expect(s.logs.join('\n')).toMatch(
      /WARN .*api key validator unavailable url=http:\/\/v.test\/user reason=timeout/,
    );
    s.validators['http://v.test/user'] = acceptsGood;
    expect((await s.get()).status).toBe(200);
    expect(s.clock.pendingTimers).toBe(0);
  });

  it('a pooled connection found closed (StaleConnectionError) is asked again once, at once', async () => {
    let sent = 0;
    const s = setup({
      'http://v.test/user': async (req) => {
        if (sent++ === 0)
          throw new StaleConnectionError('socket closed before any byte', { code: 'UND_ERR_SOCKET' });
        return acceptsGood(req);
      },
    });
    expect((await s.get()).status).toBe(200);
    expect(s.calls).toHaveLength(2);
    const twice = setup({
      'http://v.test/user': async () => {
        throw new StaleConnectionError('socket closed before any byte');
      },
    });
    expect((await twice.get()).status).toBe(503);
    expect(twice.calls).toHaveLength(2);
  });

  it('logs the outage at warn with the URL and the reason, never the token', async () => {
    const s = setup({ 'http://v.test/user': refused });
    await unavailable(await s.get());
    const text = s.logs.join('\n');
    expect(text).toContain('WARN');
    expect(text).toContain('url=http://v.test/user');
    expect(text).toContain('reason=ECONNREFUSED');
    expect(text).not.toContain(GOOD);
    expect(text).not.toContain(await tokenKey(GOOD));
    const metrics = await s.metrics.render();
    expect(metrics).not.toContain(GOOD);
    expect(metrics).toContain('vllm_router_auth_checks_total{result="unavailable"} 1');
  });
});

describe('client auth: several validation URLs', () => {
  const A = 'http://a.test/check';
  const B = 'http://b.test/check';

  it('asks them in order until one says 200', async () => {
    const s = setup({ [A]: always(401), [B]: acceptsGood });
    expect((await s.get()).status).toBe(200);
    expect(s.calls.map((c) => c.url)).toEqual([A, B]);
    s.calls.length = 0;
    const first = setup({ [A]: acceptsGood, [B]: acceptsGood });
    expect((await first.get()).status).toBe(200);
    expect(first.calls.map((c) => c.url)).toEqual([A]);
  });

  it('every URL refusing (401, 403, other 4xx, 204, 3xx) is a refusal; redirects are not followed', async () => {
    for (const status of [401, 403, 404, 204, 302]) {
      const s = setup({
        [A]: async () => answer(status, { location: 'http://evil.test/steal' }),
        [B]: always(403),
      });
      expect((await s.get()).status, `status ${status}`).toBe(401);
      expect(s.calls.map((c) => c.url)).toEqual([A, B]);
      expect(s.cacheKeys()).toEqual([await tokenKey(GOOD)]);
    }
  });

  it('no 200 and one URL unavailable: 503, nothing remembered', async () => {
    const s = setup({ [A]: always(401), [B]: always(502) });
    expect((await s.get()).status).toBe(503);
    const t = setup({ [A]: refused, [B]: always(401) });
    expect((await t.get()).status).toBe(503);
    expect(t.cacheKeys()).toEqual([]);
    const u = setup({ [A]: refused, [B]: acceptsGood });
    expect((await u.get()).status).toBe(200);
  });
});
