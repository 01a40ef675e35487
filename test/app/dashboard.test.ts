/**
 * The live fleet page in memory: who may open GET /dashboard and GET /dashboard/state (the admin
 * guard's rules), the state's shape and what it reflects (traffic, a breaker opening and its probe
 * countdown on the fake clock, sticky sessions and prefix-tree sizes, admin changes among the
 * events), the page being self-contained under its CSP, and the admin API taking the page's own
 * same-origin requests while still refusing other origins.
 */
import { describe, expect, it } from 'vitest';
import type { DashboardState } from '../../src/core/http/dashboard-state.ts';
import { type AppStack, chatBody, checkLeasesAfterEach, type ErrorBody, startApp } from './app-stack.ts';

checkLeasesAfterEach();

const ENGINES = { 'a.test': {}, 'b.test': {} };
const TWO = '--worker-urls http://a.test http://b.test --policy round_robin';
const KEY = 'admin-key-0123456789';
const REMOTE = '203.0.113.9';

const state = async (app: AppStack, headers: Record<string, string> = {}) => {
  const res = await app.request('/dashboard/state', { headers });
  expect(res.status).toBe(200);
  return (await res.json()) as DashboardState;
};
const worker = (s: DashboardState, id: string) => s.workers.find((w) => w.id === id);

/** Sends a chat request and reads its answer to the end (the lease is released then); the status. */
const chat = async (app: AppStack, question: string, headers: Record<string, string> = {}) => {
  const res = await app.post(chatBody(question), { headers });
  await res.text();
  return res.status;
};

describe('who may open the dashboard', () => {
  it('with --admin-api-key: 401 without the key (the page loads, with no fleet data), 200 with it', async () => {
    const app = await startApp(`${TWO} --admin-api-key ${KEY}`, ENGINES);
    const page = await app.request('/dashboard');
    expect(page.status).toBe(401);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('www-authenticate')).toContain('Bearer');
    expect(await page.text()).not.toContain('a.test');
    const refused = await app.request('/dashboard/state');
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as ErrorBody).error.code).toBe('invalid_api_key');
    const wrong = await app.request('/dashboard/state', { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const s = await state(app, { authorization: `Bearer ${KEY}` });
    expect(s.workers.map((w) => w.id)).toEqual(['http://a.test', 'http://b.test']);
    const ok = await app.request('/dashboard', { headers: { authorization: `Bearer ${KEY}` } });
    expect(ok.status).toBe(200);
  });

  it('without a key: loopback peers only; a remote peer gets 403 for the page and the state', async () => {
    const app = await startApp(TWO, ENGINES, { peer: REMOTE });
    for (const path of ['/dashboard', '/dashboard/state']) {
      const res = await app.request(path);
      expect(res.status, path).toBe(403);
      expect(((await res.json()) as ErrorBody).error.message).toContain('--admin-api-key');
    }
    const local = await startApp(TWO, ENGINES);
    expect((await local.request('/dashboard')).status).toBe(200);
  });

  it('applies the Host rule (DNS rebinding) and is off on Workers without a key', async () => {
    const app = await startApp(TWO, ENGINES);
    const rebound = await app.request('http://evil.example/dashboard/state');
    expect(rebound.status).toBe(403);
    const off = await startApp(TWO, ENGINES, { adminWithoutKey: 'off' });
    expect((await off.request('/dashboard/state')).status).toBe(403);
  });

  it('with client auth on, the admin key opens it (no client token asked for)', async () => {
    const app = await startApp(
      `${TWO} --admin-api-key ${KEY} --api-key-validation-urls http://auth.test/validate`,
      ENGINES,
    );
    const bearer = { authorization: `Bearer ${KEY}` };
    expect((await app.request('/dashboard/state', { headers: bearer })).status).toBe(200);
    expect((await app.request('/v1/models', { headers: bearer })).status).not.toBe(200);
  });
});

describe('the page', () => {
  it('is one self-contained document; its CSP allows exactly its inline style and script', async () => {
    const app = await startApp(TWO, ENGINES);
    const res = await app.request('/dashboard');
    const html = await res.text();
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/\ssrc=|href="(?!data:)|@import|url\(/);
    expect(html).not.toContain('innerHTML');
    expect(html.length).toBeLessThan(40_000);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    const hash = async (text: string) => {
      const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
      return `'sha256-${btoa(String.fromCharCode(...digest))}'`;
    };
    const script = /<script>([\s\S]*)<\/script>/.exec(html)?.[1] ?? '';
    const style = /<style>([\s\S]*)<\/style>/.exec(html)?.[1] ?? '';
    expect(csp).toContain(`script-src ${await hash(script)}`);
    expect(csp).toContain(`style-src ${await hash(style)}`);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });
});

describe('GET /dashboard/state', () => {
  it('lists every worker with its registry state and the last minute of its traffic', async () => {
    const app = await startApp(TWO, ENGINES);
    for (let i = 0; i < 4; i++) expect(await chat(app, `q${i}`)).toBe(200);
    const s = await state(app);
    expect(s.policies).toEqual({ regular: 'round_robin' });
    expect(s.pd).toBe(false);
    expect(s.window_secs).toBe(60);
    expect(s.router).toMatchObject({
      requests: 4,
      error_rate: 0,
      in_flight: 0,
      workers: 2,
      healthy_workers: 2,
    });
    expect(worker(s, 'http://a.test')).toMatchObject({
      url: 'http://a.test',
      role: 'regular',
      models: ['sim-model'],
      healthy: true,
      draining: false,
      circuit: 'closed',
      next_probe_in_ms: null,
      load: 0,
      processed: 2,
      requests: 2,
      error_rate: 0,
      sessions: null,
      tree_size: null,
    });
    expect(worker(s, 'http://a.test')?.latency_ms).not.toBeNull();
  });

  it('shows a breaker opening, the time left before it admits a probe, and the retries', async () => {
    const app = await startApp(`${TWO} --cb-failure-threshold 2 --cb-timeout-duration-secs 30`, {
      'a.test': {},
      'b.test': { failure: { mode: 'status', status: 500 } },
    });
    for (let i = 0; i < 4; i++) expect(await chat(app, `q${i}`)).toBe(200);
    let s = await state(app);
    const b = worker(s, 'http://b.test');
    expect(b?.circuit).toBe('open');
    expect(b?.next_probe_in_ms).toBe(30_000);
    expect(s.events.find((e) => e.kind === 'breaker')).toMatchObject({
      worker: 'http://b.test',
      level: 'warn',
      message: 'circuit closed → open',
    });
    expect(s.events.some((e) => e.kind === 'retry' && e.worker === 'http://a.test')).toBe(true);
    app.clock.advance(12_000);
    s = await state(app);
    expect(worker(s, 'http://b.test')?.next_probe_in_ms).toBe(18_000);
    app.clock.advance(20_000);
    s = await state(app);
    expect(worker(s, 'http://b.test')?.next_probe_in_ms).toBe(0);
  });

  it('counts a worker error in its error rate (the last worker: its 500 passes through)', async () => {
    const app = await startApp('--worker-urls http://a.test --disable-retries', {
      'a.test': { failure: { mode: 'status', status: 500, first: 1 } },
    });
    expect(await chat(app, 'fails')).toBe(500);
    expect(await chat(app, 'works')).toBe(200);
    const s = await state(app);
    expect(worker(s, 'http://a.test')?.error_rate).toBe(0.5);
    expect(s.router.error_rate).toBe(0.5);
  });

  it('reports sticky sessions pinned and active per worker', async () => {
    const app = await startApp(
      '--worker-urls http://a.test http://b.test --policy sticky_least_loaded',
      ENGINES,
    );
    for (const session of ['s1', 's2', 's3']) {
      expect(await chat(app, 'hi', { 'x-session-id': session })).toBe(200);
    }
    const s = await state(app);
    const pinned = s.workers.map((w) => w.sessions?.pinned ?? -1);
    expect(pinned.reduce((a, b) => a + b, 0)).toBe(3);
    expect(s.workers.every((w) => w.sessions !== null && w.tree_size === null)).toBe(true);
  });

  it('reports the prefix-tree size per worker under cache_aware', async () => {
    const app = await startApp('--worker-urls http://a.test http://b.test --policy cache_aware', ENGINES);
    expect(await chat(app, 'a question')).toBe(200);
    const s = await state(app);
    const sizes = s.workers.map((w) => w.tree_size ?? -1);
    expect(Math.max(...sizes)).toBeGreaterThan(100);
    expect(Math.min(...sizes)).toBe(0);
    expect(s.workers.every((w) => w.sessions === null)).toBe(true);
  });

  it('lists workers added, drained and removed through the admin API among the events', async () => {
    const app = await startApp(TWO, { ...ENGINES, 'c.test': {} });
    expect((await app.post({ url: 'http://c.test' }, { path: '/workers' })).status).toBe(201);
    expect((await app.request('/add_worker?url=http://c.test', { method: 'POST' })).status).toBe(200);
    const del = await app.request(`/workers/${encodeURIComponent('http://a.test')}`, { method: 'DELETE' });
    expect(del.status).toBe(202);
    expect((await app.request('/remove_worker?url=http://b.test', { method: 'POST' })).status).toBe(200);
    expect((await app.request('/remove_worker?url=http://zzz.test', { method: 'POST' })).status).toBe(404);
    const s = await state(app);
    expect(s.workers.map((w) => w.id)).toEqual(['http://c.test']);
    expect(s.events.filter((e) => e.kind === 'admin').map((e) => `${e.worker} ${e.message}`)).toEqual([
      'http://b.test removed from the admin API',
      'http://a.test removed from the admin API',
      'http://c.test added from the admin API',
    ]);
  });
});

describe('a drain with requests in flight', () => {
  it('shows the worker draining until its last request ends, then gone', async () => {
    const app = await startApp('--worker-urls http://a.test', { 'a.test': {} });
    const res = await app.post(chatBody('long', { stream: true }));
    const reader = res.body!.getReader();
    await reader.read(); // the answer has started: the request holds its lease
    const del = await app.request(`/workers/${encodeURIComponent('http://a.test')}`, { method: 'DELETE' });
    expect(await del.json()).toMatchObject({ draining: true });
    let s = await state(app);
    expect(worker(s, 'http://a.test')).toMatchObject({ draining: true, load: 1 });
    expect(s.router.in_flight).toBe(1);
    expect(s.events[0]).toMatchObject({
      kind: 'admin',
      worker: 'http://a.test',
      message: 'draining (removal requested from the admin API)',
    });
    while (!(await reader.read()).done) {}
    s = await state(app);
    expect(s.workers).toEqual([]);
  });
});

describe("the page's own requests to the admin API", () => {
  const add = (app: AppStack, headers: Record<string, string>) =>
    app.request('http://127.0.0.1:30000/workers', {
      method: 'POST',
      headers: { 'content-type': 'application/json', host: '127.0.0.1:30000', ...headers },
      body: JSON.stringify({ url: 'http://c.test' }),
    });

  it('takes a same-origin Origin (the router itself) and still refuses any other', async () => {
    const app = await startApp(TWO, { ...ENGINES, 'c.test': {} });
    const foreign = await add(app, { origin: 'http://127.0.0.1:30001', 'sec-fetch-site': 'same-site' });
    expect(foreign.status).toBe(403);
    expect(await add(app, { origin: 'http://evil.example' }).then((r) => r.status)).toBe(403);
    expect(await add(app, { origin: 'null' }).then((r) => r.status)).toBe(403);
    const own = await add(app, { origin: 'http://127.0.0.1:30000', 'sec-fetch-site': 'same-origin' });
    expect(own.status).toBe(201);
  });
});
