import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { isUnsafePath, pathHygiene } from '../../../src/core/http/path-hygiene.ts';

describe('path hygiene', () => {
  it('refuses dot segments (raw and encoded), encoded slashes and backslashes, backslashes and NUL', () => {
    const unsafe = [
      '/v1/../flush_cache',
      '/v1/./models',
      '/v1/..',
      '/v1/.',
      '/..',
      '/v1/%2e%2e/flush_cache',
      '/v1/%2E%2E/flush_cache',
      '/v1/.%2e/flush_cache',
      '/v1/%2e./flush_cache',
      '/v1/%2e/models',
      '/v1/models/%2E',
      '/v1%2fflush_cache',
      '/v1%2Fflush_cache',
      '/v1%5cflush_cache',
      '/v1\\..\\flush_cache',
      '/v1/models\u0000',
      '/v1/models%00',
      '/workers/%2e%2e',
      '/workers/a%5cb',
      '/workers/a/%2fb',
    ];
    for (const p of unsafe) expect(isUnsafePath(p), p).toBe(true);
  });

  it('lets ordinary paths through, dots inside names and the encoded worker id of /workers/{id}', () => {
    const safe = [
      '/',
      '/v1/chat/completions',
      '/.well-known/x',
      '/v1/files/a..b',
      '/v1/files/...',
      '/v1/files/.hidden',
      '/workers/http%3A%2F%2F127.0.0.1%3A8000',
      '/workers/http%3A%2F%2Fengine%3A8000%2Fprefix',
    ];
    for (const p of safe) expect(isUnsafePath(p), p).toBe(false);
  });

  const app = new Hono();
  app.use('*', pathHygiene);
  app.all('*', (c) => c.text(`reached ${c.req.path}`));

  it('answers 400 invalid_request before any route runs; the query is not a path', async () => {
    const bad = await app.request('/v1%2fflush_cache');
    expect(bad.status).toBe(400);
    const body = (await bad.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.message).toMatch(/invalid request path/);
    const ok = await app.request('/add_worker?url=http%3A%2F%2Fw%3A8000%2F..%5c');
    expect(await ok.text()).toBe('reached /add_worker');
  });

  it('checks the raw target a runtime keeps (Node: c.env.incoming.url) as well as the parsed URL', async () => {
    // `new Request` resolved `%2e%2e` already: only the raw target shows it.
    expect(await (await app.request('/v1/%2e%2e/flush_cache')).text()).toBe('reached /flush_cache');
    const raw = await app.request('/flush_cache', {}, { incoming: { url: '/v1/%2e%2e/flush_cache' } });
    expect(raw.status).toBe(400);
    const absolute = await app.request('/x', {}, { incoming: { url: 'http://h/v1/%2E./x' } });
    expect(absolute.status).toBe(400);
    expect((await app.request('/v1/models', {}, { incoming: { url: '/v1/models' } })).status).toBe(200);
  });
});
