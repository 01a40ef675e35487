/**
 * The admin guard in memory: who may call the admin API (admin key, loopback peers, nobody on
 * Workers), the browser rules for state-changing requests (Origin, Sec-Fetch-Site, content types),
 * the Host rule (DNS rebinding), and the worker URL rules for workers added at runtime.
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/core/config/load.ts';
import { parseRouterConfig } from '../../src/core/config/schema.ts';
import { ADMIN_ROUTES } from '../../src/core/http/admin.ts';
import { createAdminGuard } from '../../src/core/http/admin-guard.ts';
import type { ClientAuth } from '../../src/core/http/client-auth.ts';
import { createRouter } from '../../src/core/router.ts';
import { createSimEngine } from '../../src/sim/engine.ts';
import { FakeClock, seededRandom } from '../support/fake-clock.ts';
import { inMemoryUpstream } from '../support/in-memory-upstream.ts';
import { type AppStack, checkLeasesAfterEach, type ErrorBody, startApp } from './app-stack.ts';

checkLeasesAfterEach();

const ENGINES = { 'a.test': {}, 'b.test': {} };
const TWO = '--worker-urls http://a.test http://b.test';
const REMOTE = '203.0.113.9';
const KEY = 'admin-key-0123456789';

const ids = (app: AppStack) => app.router.fleet.listWorkers().map((w) => w.id);
const errorOf = async (res: Response) => ((await res.json()) as ErrorBody).error;

/** One request per admin route (ids filled in), as the route's method. */
function everyAdminRoute(): { method: string; path: string }[] {
  return ADMIN_ROUTES.filter((r) => r.access !== 'client').map((r) => ({
    method: r.method,
    path: r.path.replace(':id', encodeURIComponent('http://a.test')),
  }));
}

describe('admin API without --admin-api-key (Node, Deno: loopback peers only)', () => {
  it('answers a loopback peer (127/8, ::1, IPv4-mapped)', async () => {
    for (const peer of ['127.0.0.1', '127.3.2.1', '::1', '::ffff:127.0.0.1']) {
      const app = await startApp(TWO, ENGINES, { peer });
      expect((await app.request('/workers')).status, peer).toBe(200);
    }
  });

  it('refuses every admin route to a remote peer with a 403 naming --admin-api-key', async () => {
    const app = await startApp(TWO, ENGINES, { peer: REMOTE });
    app.net.clearCalls();
    for (const { method, path } of everyAdminRoute()) {
      const res = await app.request(path, { method });
      expect(res.status, `${method} ${path}`).toBe(403);
      const error = await errorOf(res);
      expect(error.code).toBe('forbidden');
      expect(error.type).toBe('permission_error');
      expect(error.message).toContain('--admin-api-key');
    }
    expect(app.net.calls, 'no engine was called').toEqual([]);
    // The client routes are not admin routes.
    expect((await app.request('/finish_session', { method: 'POST' })).status).toBe(400);
  });

  it('a remote peer cannot add http://attacker or remove a worker: the fleet is unchanged', async () => {
    for (const peer of [REMOTE, '::ffff:10.0.0.1', '::127.0.0.1', '']) {
      const app = await startApp(TWO, ENGINES, { peer });
      const add = await app.request('/add_worker?url=http://attacker.test', { method: 'POST' });
      expect(add.status, peer).toBe(403);
      const post = await app.post({ url: 'http://attacker.test' }, { path: '/workers' });
      expect(post.status).toBe(403);
      const del = await app.request(`/workers/${encodeURIComponent('http://a.test')}`, { method: 'DELETE' });
      expect(del.status).toBe(403);
      expect(ids(app)).toEqual(['http://a.test', 'http://b.test']);
      expect(app.router.fleet.listWorkers().every((w) => !w.draining)).toBe(true);
    }
  });

  it('treats a missing peer address as not loopback', async () => {
    const net = inMemoryUpstream({ 'a.test': createSimEngine({ id: 'a' }) });
    const router = createRouter(parseRouterConfig({ workers: { urls: ['http://a.test'] } }), {
      upstream: net.upstream,
      logSink: () => {},
      clock: new FakeClock(),
      random: seededRandom(1),
    });
    const res = await router.app.request('/workers');
    expect(res.status).toBe(403);
    expect((await errorOf(res)).message).toContain('--admin-api-key');
  });

  it('is off on Workers (withoutKey off): 403 naming the ADMIN_API_KEY secret, even from loopback', async () => {
    const app = await startApp(TWO, ENGINES, { adminWithoutKey: 'off' });
    const res = await app.request('/workers');
    expect(res.status).toBe(403);
    expect((await errorOf(res)).message).toContain('ADMIN_API_KEY');
    expect((await app.request('/add_worker?url=http://c.test', { method: 'POST' })).status).toBe(403);
    expect(ids(app)).toEqual(['http://a.test', 'http://b.test']);
  });
});

describe('admin API with --admin-api-key', () => {
  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

  it('needs Authorization: Bearer KEY from anyone: 401 without it or with a wrong key', async () => {
    const app = await startApp(`${TWO} --admin-api-key ${KEY}`, ENGINES, { peer: REMOTE });
    const none = await app.request('/workers');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const error = await errorOf(none);
    expect(error).toMatchObject({ code: 'invalid_api_key', type: 'authentication_error' });
    expect(error.message).toContain('--admin-api-key');
    for (const wrong of ['nope', `${KEY}x`, KEY.slice(0, -1), KEY.toUpperCase()]) {
      const res = await app.request('/workers', bearer(wrong));
      expect(res.status, wrong).toBe(401);
      const text = await res.text();
      expect(text).not.toContain(KEY);
      expect(text).not.toContain(wrong);
    }
    expect((await app.request('/workers', { headers: { authorization: KEY } })).status).toBe(401);
    expect((await app.request('/workers', { headers: { authorization: `Basic ${KEY}` } })).status).toBe(401);
    // Loopback peers need the key too once it is set.
    const local = await startApp(`${TWO} --admin-api-key ${KEY}`, ENGINES);
    expect((await local.request('/workers')).status).toBe(401);
  });

  it('lets the right key in from a remote peer and on Workers; the key can come from the environment', async () => {
    const remote = await startApp(`${TWO} --admin-api-key ${KEY}`, ENGINES, { peer: REMOTE });
    expect((await remote.request('/workers', bearer(KEY))).status).toBe(200);
    expect((await remote.request('/workers', { headers: { authorization: `bearer   ${KEY}` } })).status).toBe(
      200,
    );
    const added = await remote.request('/add_worker?url=http://c.test', { method: 'POST', ...bearer(KEY) });
    expect(added.status).toBe(201);
    const workers = await startApp(`${TWO} --admin-api-key ${KEY}`, ENGINES, { adminWithoutKey: 'off' });
    expect((await workers.request('/workers', bearer(KEY))).status).toBe(200);
    const fromEnv = await startApp(TWO, ENGINES, { peer: REMOTE, env: { VLLM_ROUTER_ADMIN_API_KEY: KEY } });
    expect((await fromEnv.request('/get_loads', bearer(KEY))).status).toBe(200);
    expect((await fromEnv.request('/get_loads')).status).toBe(401);
  });

  it('still applies the worker URL rules to an authorized caller', async () => {
    const app = await startApp(`${TWO} --admin-api-key ${KEY}`, ENGINES, { peer: REMOTE });
    const res = await app.request('/add_worker?url=http://c.test/?', { method: 'POST', ...bearer(KEY) });
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ code: 'invalid_request', param: 'url' });
    expect(ids(app)).toEqual(['http://a.test', 'http://b.test']);
  });
});

describe('state-changing admin requests: browser rules', () => {
  const add = (app: AppStack, headers: Record<string, string>, body?: BodyInit) =>
    app.request('/add_worker?url=http://c.test', { method: 'POST', headers, ...(body ? { body } : {}) });

  it('refuses form and text bodies (what a cross-site simple request can send) and other non-JSON types', async () => {
    const app = await startApp(TWO, ENGINES);
    const types = [
      'text/plain',
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      'text/json',
    ];
    for (const type of types) {
      const res = await add(app, { 'content-type': type }, 'url=http://c.test');
      expect(res.status, type).toBe(403);
      expect((await errorOf(res)).message).toMatch(/Content-Type/);
    }
    // A declared body without a content type, and a JSON body sent as text to the body routes.
    const bytes = new TextEncoder().encode('abcd'); // no content type of its own
    expect((await add(app, { 'content-length': '4' }, bytes)).status).toBe(403);
    expect((await add(app, { 'transfer-encoding': 'chunked' }, bytes)).status).toBe(403);
    const blob = await app.request('/workers', {
      method: 'POST',
      body: new Blob(['{"url":"http://c.test"}']),
    });
    expect(blob.status).toBe(403);
    expect(ids(app)).toEqual(['http://a.test', 'http://b.test']);
  });

  it('accepts a bodiless POST without a content type (curl -X POST) and JSON bodies', async () => {
    const app = await startApp(TWO, ENGINES);
    expect((await add(app, {})).status).toBe(201);
    expect((await add(app, {})).status).toBe(200); // already registered
    const json = await app.request('/workers', {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ url: 'http://d.test' }),
    });
    expect(json.status).toBe(201);
    expect(ids(app)).toEqual(['http://a.test', 'http://b.test', 'http://c.test', 'http://d.test']);
  });

  it('refuses an Origin not in --cors-allowed-origins, and Sec-Fetch-Site: cross-site without one', async () => {
    const app = await startApp(`${TWO} --cors-allowed-origins https://ui.example`, ENGINES);
    for (const origin of ['http://evil.example', 'null', 'https://ui.example.evil']) {
      const res = await add(app, { origin });
      expect(res.status, origin).toBe(403);
      expect((await errorOf(res)).message).toContain('--cors-allowed-origins');
    }
    const crossSite = await add(app, { 'sec-fetch-site': 'cross-site' });
    expect(crossSite.status).toBe(403);
    expect((await errorOf(crossSite)).message).toContain('Sec-Fetch-Site');
    const del = await app.request(`/workers/${encodeURIComponent('http://a.test')}`, {
      method: 'DELETE',
      headers: { origin: 'http://evil.example' },
    });
    expect(del.status).toBe(403);
    expect(ids(app)).toEqual(['http://a.test', 'http://b.test']);
    // Reads are not changes: only the Host rule applies to them.
    expect((await app.request('/workers', { headers: { origin: 'http://evil.example' } })).status).toBe(200);
    expect((await add(app, { origin: 'https://ui.example', 'sec-fetch-site': 'cross-site' })).status).toBe(
      201,
    );
    expect((await add(app, { 'sec-fetch-site': 'same-origin' })).status).toBe(200);
  });
});

describe('the Host rule (DNS rebinding), on every admin route', () => {
  const withHost = (app: AppStack, host: string, method = 'GET', path = '/workers') =>
    app.request(path, { method, headers: { host } });

  it('refuses a Host that is not this router, localhost or an IP literal, GET included', async () => {
    const app = await startApp(TWO, ENGINES);
    for (const host of ['evil.example', 'evil.example:30000', 'localhost.evil.example', '', 'a b']) {
      const res = await withHost(app, host);
      expect(res.status, host).toBe(403);
      expect((await errorOf(res)).message).toContain('--allowed-hosts');
    }
    expect((await withHost(app, 'evil.example', 'POST', '/add_worker?url=http://c.test')).status).toBe(403);
    expect((await app.request('http://evil.example/workers')).status).toBe(403);
    expect(ids(app)).toEqual(['http://a.test', 'http://b.test']);
    // Not an admin route: the rule does not apply.
    expect((await withHost(app, 'evil.example', 'GET', '/v1/models')).status).toBe(200);
  });

  it('accepts localhost names, IP literals, the router --host and --allowed-hosts patterns', async () => {
    const app = await startApp(
      `${TWO} --host router.example --allowed-hosts router.internal *.corp.example`,
      ENGINES,
    );
    const hosts = [
      'localhost',
      'localhost:30000',
      'ui.localhost:8080',
      '127.0.0.1:30000',
      '[::1]:30000',
      '10.1.2.3',
      'router.example:30000',
      'router.internal:30000',
      'ROUTER.INTERNAL',
      'r1.corp.example',
    ];
    for (const host of hosts) expect((await withHost(app, host)).status, host).toBe(200);
    expect((await withHost(app, 'other.internal')).status).toBe(403);
    expect((await withHost(app, 'corp.example')).status).toBe(403);
  });

  it('a wildcard --host is no name to accept', async () => {
    const app = await startApp(`${TWO} --host 0.0.0.0`, ENGINES);
    expect((await withHost(app, '0.0.0.0:30000')).status).toBe(200); // an IP literal
    expect((await withHost(app, 'router.example')).status).toBe(403);
  });
});

describe('worker URLs added at runtime', () => {
  it('400 naming the rule (param url) for a query, a bare ?, credentials, a fragment, another scheme', async () => {
    const app = await startApp(TWO, ENGINES);
    const cases: [string, RegExp][] = [
      ['http://c.test/?', /query/],
      ['http://c.test?x=1', /query/],
      ['http://user:s3cret-pw@c.test', /credentials/],
      ['http://c.test/#', /fragment/],
      ['ftp://c.test', /http/],
    ];
    for (const [url, rule] of cases) {
      const legacy = await app.request(`/add_worker?url=${encodeURIComponent(url)}`, { method: 'POST' });
      expect(legacy.status, url).toBe(400);
      const legacyText = await legacy.text();
      expect(legacyText).not.toContain('s3cret-pw');
      const error = (JSON.parse(legacyText) as ErrorBody).error;
      expect(error).toMatchObject({ code: 'invalid_request', param: 'url' });
      expect(error.message).toMatch(rule);
      const body = await app.post({ url }, { path: '/workers' });
      expect(body.status, url).toBe(400);
      const bodyText = await body.text();
      expect(bodyText).not.toContain('s3cret-pw');
      expect((JSON.parse(bodyText) as ErrorBody).error).toMatchObject({ param: 'url' });
    }
    expect(ids(app)).toEqual(['http://a.test', 'http://b.test']);
    expect(app.net.calls.filter((c) => c.host === 'c.test')).toEqual([]);
  });

  it('--worker-url-allowlist restricts the host: 403 naming the flag', async () => {
    const app = await startApp(`${TWO} --worker-url-allowlist *.test 10.0.0.0/8`, {
      ...ENGINES,
      'c.test': {},
    });
    const refused = await app.request('/add_worker?url=http://attacker.example', { method: 'POST' });
    expect(refused.status).toBe(403);
    expect(await errorOf(refused)).toMatchObject({ code: 'forbidden', param: 'url' });
    expect(
      (await errorOf(await app.post({ url: 'http://169.254.169.254' }, { path: '/workers' }))).message,
    ).toContain('--worker-url-allowlist');
    expect((await app.request('/add_worker?url=http://c.test', { method: 'POST' })).status).toBe(201);
    expect(ids(app)).toEqual(['http://a.test', 'http://b.test', 'http://c.test']);
  });
});

describe('path tricks do not bypass the guard', () => {
  it('an encoded dot-dot path resolved to /flush_cache is an admin request; %2f is a 400', async () => {
    const app = await startApp(TWO, ENGINES, { peer: REMOTE });
    app.net.clearCalls();
    // `new Request` (as Deno and Workers) resolves %2e%2e before the app sees it.
    expect((await app.request('/v1/%2e%2e/flush_cache', { method: 'POST' })).status).toBe(403);
    expect((await app.request('/v1%2f..%2fflush_cache', { method: 'POST' })).status).toBe(400);
    expect((await app.request('/v1/..%5cflush_cache', { method: 'POST' })).status).toBe(400);
    expect(app.net.calls).toEqual([]);
  });
});

describe('client auth and the admin guard', () => {
  it('without an admin key, a loopback caller must also pass client auth', async () => {
    const config = resolveConfig({ argv: [], env: {}, readTextFile: () => '' }).config;
    const seen: string[] = [];
    const clientAuth: ClientAuth = {
      check: async (c) => {
        seen.push(c.req.path);
        return c.req.header('authorization') === 'Bearer client-token'
          ? undefined
          : new Response('client auth says no', { status: 401 });
      },
      checkAuthorization: async () => undefined, // the inference routes' check: not used here
      middleware: () => async (_c, next) => next(),
    };
    const guard = createAdminGuard(config, {
      withoutKey: 'loopback',
      peerAddress: () => '127.0.0.1',
      clientAuth,
    });
    const app = new Hono();
    app.get('/workers', async (c) => (await guard(c, ADMIN_ROUTES[0]!)) ?? c.text('ran'));
    const refused = await app.request('/workers');
    expect(refused.status).toBe(401);
    expect(await refused.text()).toBe('client auth says no');
    const ok = await app.request('/workers', { headers: { authorization: 'Bearer client-token' } });
    expect(await ok.text()).toBe('ran');
    expect(seen).toEqual(['/workers', '/workers']);
  });
});
