/**
 * The locked admin API over real loopback HTTP: the admin key, the browser rules, the Host rule,
 * runtime worker URL rules closing the SSRF of a `?`-ended worker URL, raw request targets sent
 * byte for byte over node:net (path hygiene), and engine-management routes fanned out to every
 * engine. A real "internal" HTTP server stands for a service the router must never be turned into
 * a proxy for. (Requests from a non-loopback peer are in test/app/admin-guard.test.ts: servers
 * here listen on 127.0.0.1 only.)
 */
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { connect } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type Running, startStack } from '../support/harness.ts';

const KEY = 'integration-admin-key-42';

interface RawAnswer {
  status: number;
  head: string;
  body: string;
}

/** Sends `lines` (a request head, CRLF-joined, no body) as raw bytes; reads the answer to the close. */
function rawRequest(port: number, lines: string[]): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      data += chunk;
    });
    socket.on('error', reject);
    socket.on('end', () => {
      const split = data.indexOf('\r\n\r\n');
      const head = split < 0 ? data : data.slice(0, split);
      resolve({ status: Number(head.split(' ')[1]), head, body: split < 0 ? '' : data.slice(split + 4) });
    });
    socket.write(`${[...lines, 'Connection: close', '', ''].join('\r\n')}`);
  });
}

/** A request with a Host header of our choosing (fetch does not let a test pick it). */
function withHost(url: string, host: string, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** An internal service on loopback: answers every request with its secret and counts them. */
async function internalService(): Promise<{
  url: string;
  port: number;
  hits: string[];
  close(): Promise<void>;
}> {
  const hits: string[] = [];
  const server: Server = createHttpServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [{ id: 'sim-model' }], secret: 'INTERNAL-SECRET' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const flushes = (stack: Running) =>
  stack.engines.flatMap((e) => e.engine.probeLog.filter((p) => p.path === '/flush_cache'));

describe('admin API security over loopback HTTP', () => {
  let stack: Running | undefined;
  let internal: Awaited<ReturnType<typeof internalService>> | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
    await internal?.close();
    internal = undefined;
  });

  it('with --admin-api-key: wrong key 401, right key 201, and the URL rules still close the SSRF', async () => {
    internal = await internalService();
    stack = await startStack({
      engines: 1,
      config: { admin: { apiKey: KEY } },
      router: { healthLoop: false },
    });
    const base = stack.router.url;
    const add = (url: string, token?: string) =>
      fetch(`${base}/add_worker?url=${encodeURIComponent(url)}`, {
        method: 'POST',
        ...(token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } }),
      });

    expect((await add(internal.url)).status).toBe(401);
    const wrong = await add(internal.url, 'not-the-key');
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).not.toContain(KEY);
    // A worker URL ending in `?` would turn every forwarded path into a query of the internal page.
    for (const url of [
      `${internal.url}/?`,
      `${internal.url}?`,
      `${internal.url}/#`,
      `http://u:p@127.0.0.1:${internal.port}`,
    ]) {
      const res = await add(url, KEY);
      expect(res.status, url).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe('url');
    }
    const viaBody = await fetch(`${base}/workers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${internal.url}/?` }),
    });
    expect(viaBody.status).toBe(400);
    expect(stack.router.fleet.listWorkers().map((w) => w.url)).toEqual([stack.engines[0]!.url]);

    // /v1/anything reaches the one real engine, never the internal service.
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-client', maxRetries: 0 });
    for (let i = 0; i < 3; i++) {
      const answer = await client.post<{ object: string; path: string }>('/anything', { body: { probe: i } });
      expect(answer).toMatchObject({ object: 'echo', path: '/v1/anything' });
      expect(JSON.stringify(answer)).not.toContain('INTERNAL-SECRET');
    }
    expect(internal.hits, 'the internal service got no request').toEqual([]);

    // The right key adds a real engine (and the worker URL rules let a plain base URL in).
    const engine = await internalService();
    try {
      const ok = await add(engine.url, KEY);
      expect(ok.status).toBe(201);
    } finally {
      await engine.close();
    }
  });

  it('refuses text/plain and a foreign Origin on /add_worker; accepts the curl-style bodiless POST', async () => {
    internal = await internalService();
    stack = await startStack({ engines: 1, router: { healthLoop: false } });
    const { port, url: base } = stack.router;
    const target = `/add_worker?url=${encodeURIComponent(internal.url)}`;
    const text = await fetch(`${base}${target}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(text.status).toBe(403);
    expect(((await text.json()) as { error: { message: string } }).error.message).toContain('Content-Type');
    const evil = await fetch(`${base}${target}`, {
      method: 'POST',
      headers: { origin: 'http://evil.example' },
    });
    expect(evil.status).toBe(403);
    expect(((await evil.json()) as { error: { message: string } }).error.message).toContain(
      '--cors-allowed-origins',
    );
    expect(internal.hits).toEqual([]);

    // What `curl -X POST 'http://router:30000/add_worker?url=http://w:8000'` sends, byte for byte.
    const curl = [
      `POST ${target} HTTP/1.1`,
      `Host: 127.0.0.1:${port}`,
      'User-Agent: curl/8.5.0',
      'Accept: */*',
    ];
    expect((await rawRequest(port, curl)).status).toBe(201);
    expect((await rawRequest(port, curl)).status).toBe(200); // already registered
    expect(stack.router.fleet.listWorkers().map((w) => w.url)).toEqual([stack.engines[0]!.url, internal.url]);
  });

  it('refuses a foreign Host (DNS rebinding) on reads and changes; --allowed-hosts lets a name in', async () => {
    stack = await startStack({
      engines: 1,
      config: { server: { allowedHosts: ['router.internal'] } },
      router: { healthLoop: false },
    });
    const base = stack.router.url;
    const read = await withHost(`${base}/workers`, 'evil.example');
    expect(read.status).toBe(403);
    expect(read.body).toContain('--allowed-hosts');
    expect(read.body).not.toContain(stack.engines[0]!.url); // the fleet does not leak
    expect((await withHost(`${base}/flush_cache`, 'evil.example:30000', 'POST')).status).toBe(403);
    expect(flushes(stack)).toEqual([]);
    expect((await withHost(`${base}/workers`, 'router.internal:30000')).status).toBe(200);
    expect((await withHost(`${base}/workers`, `localhost:${stack.router.port}`)).status).toBe(200);
    expect((await withHost(`${base}/workers`, 'router.internal.evil.example')).status).toBe(403);
  });

  it('answers 400 to /v1/%2e%2e/flush_cache sent raw; no engine is flushed, none gets the request', async () => {
    stack = await startStack({ engines: 2, router: { healthLoop: false } });
    const { port } = stack.router;
    for (const path of [
      '/v1/%2e%2e/flush_cache',
      '/v1/%2E%2E/flush_cache',
      '/v1/../flush_cache',
      '/v1/.%2e/flush_cache',
    ]) {
      const answer = await rawRequest(port, [`POST ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`]);
      expect(answer.status, path).toBe(400);
      expect(answer.body).toContain('invalid_request');
    }
    const slash = await rawRequest(port, [`POST /v1%2fflush_cache HTTP/1.1`, `Host: 127.0.0.1:${port}`]);
    expect(slash.status).toBe(400);
    expect(flushes(stack)).toEqual([]);
    expect(stack.engines.flatMap((e) => e.engine.log)).toEqual([]);
  });

  it('(why the raw target matters) @hono/node-server hands the app %2e%2e already resolved', async () => {
    const app = new Hono();
    app.all('*', (c) =>
      c.json({
        url: new URL(c.req.url).pathname,
        raw: (c.env as { incoming: { url: string } }).incoming.url,
      }),
    );
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    try {
      const { port } = server.address() as { port: number };
      const answer = await rawRequest(port, [
        'POST /v1/%2e%2e/flush_cache HTTP/1.1',
        `Host: 127.0.0.1:${port}`,
      ]);
      expect(JSON.parse(answer.body)).toEqual({ url: '/flush_cache', raw: '/v1/%2e%2e/flush_cache' });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('fans /v1/load_lora_adapter out to every engine instead of passing it through to one', async () => {
    stack = await startStack({ engines: 2, router: { healthLoop: false } });
    const res = await fetch(`${stack.router.url}/v1/load_lora_adapter`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ lora_name: 'sql', lora_path: '/adapters/sql' }),
    });
    expect(res.status).toBe(200);
    const summary = (await res.json()) as { ok: boolean; results: { url: string; status: number }[] };
    expect(summary.results.map((r) => [r.url, r.status])).toEqual(stack.engines.map((e) => [e.url, 200]));
    for (const engine of stack.engines) {
      expect(engine.engine.log.map((e) => [e.path, e.body])).toEqual([
        ['/v1/load_lora_adapter', { lora_name: 'sql', lora_path: '/adapters/sql' }],
      ]);
    }
  });
});
