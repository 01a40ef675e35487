/**
 * Header hygiene over real loopback HTTP, with the official openai SDK as the client: what a raw
 * engine is sent (no client cookie, token or DP rank; the forwarding headers), the engine's CORS
 * headers never reaching the client, preflights answered by the router, generic client-facing
 * errors for a reset connection and a port nothing listens on (the detail in the log), and short
 * answers to requests node:http rejects before any handler runs.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import OpenAI, { APIError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { clientErrorAnswer, handleClientError } from '../../src/adapters/node/client-error.ts';
import { type NodeRouter, startNodeRouter } from '../../src/adapters/node/server.ts';
import { type Running, startStack, testConfig } from '../support/harness.ts';

interface RawEngine {
  url: string;
  /** Inference requests (anything but the probes), in order. */
  seen: { method: string; path: string; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-raw',
  object: 'chat.completion',
  created: 0,
  model: 'sim-model',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});

/** An engine that records every request's headers and sets CORS headers of its own on answers. */
async function startRawEngine(): Promise<RawEngine> {
  const seen: RawEngine['seen'] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '/';
      const engineCors = {
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': 'true',
        'access-control-expose-headers': 'x-engine-secret',
        vary: 'origin',
      };
      if (path === '/health') return void res.writeHead(200).end();
      if (path === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ object: 'list', data: [{ id: 'sim-model', object: 'model' }] }));
      }
      seen.push({ method: req.method ?? '', path, headers: req.headers });
      res.writeHead(200, { 'content-type': 'application/json', ...engineCors });
      res.end(COMPLETION);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => closeServer(server) };
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A loopback port nothing listens on (bound, then released). */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await closeServer(server);
  return port;
}

/** Sends raw bytes and returns everything the server wrote before it closed the connection. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      out += d;
    });
    socket.on('end', () => socket.end());
    socket.on('close', () => resolve(out));
    socket.on('error', (err: NodeJS.ErrnoException) =>
      err.code === 'ECONNRESET' ? resolve(out) : reject(err),
    );
    socket.write(bytes, 'latin1');
  });
}

function splitAnswer(raw: string): { status: number; headers: string; body: string } {
  const end = raw.indexOf('\r\n\r\n');
  const head = end < 0 ? raw : raw.slice(0, end);
  return {
    status: Number(head.split(' ')[1]),
    headers: head.toLowerCase(),
    body: end < 0 ? '' : raw.slice(end + 4),
  };
}

const OVERSIZED = `GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
const MALFORMED = 'GET /v1/models NOT-HTTP\r\nHost: x\r\n\r\n';

describe('hygiene over loopback HTTP', () => {
  let router: NodeRouter | undefined;
  let engine: RawEngine | undefined;
  let stack: Running | undefined;
  let plain: Server | undefined;
  afterEach(async () => {
    await router?.close(0);
    await engine?.close();
    await stack?.stop();
    if (plain) await closeServer(plain);
    router = engine = stack = plain = undefined;
  });

  const start = async (overrides: Parameters<typeof testConfig>[1] = {}) => {
    engine = await startRawEngine();
    router = await startNodeRouter(testConfig([engine.url], overrides), {
      logSink: () => {},
      metricsListener: false,
      healthLoop: false,
    });
    return { router, engine };
  };

  it("forwards no client cookie, token or DP rank; appends the peer; drops the engine's CORS headers", async () => {
    const { router, engine } = await start();
    const client = new OpenAI({
      baseURL: `${router.url}/v1`,
      apiKey: 'sk-client-secret',
      maxRetries: 0,
      defaultHeaders: {
        Cookie: 'session=client-cookie',
        'x-data-parallel-rank': '5',
        'X-Forwarded-For': '203.0.113.5',
      },
    });
    const { data, response } = await client.chat.completions
      .create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('hello');
    for (const [name] of response.headers) expect(name.startsWith('access-control-'), name).toBe(false);

    expect(engine.seen).toHaveLength(1);
    const sent = engine.seen[0]!.headers;
    expect(sent.cookie).toBeUndefined();
    expect(sent.authorization).toBeUndefined();
    expect(sent['x-data-parallel-rank']).toBeUndefined();
    expect(sent['x-forwarded-for']).toBe('203.0.113.5, 127.0.0.1');
    expect(sent.forwarded).toBe('for=127.0.0.1');
    expect(sent['x-forwarded-proto']).toBe('http');
    expect(sent['x-forwarded-host']).toBe(`127.0.0.1:${router.port}`);
    expect(sent['x-request-id']).toBe(response.headers.get('x-request-id'));
  });

  it('sends --api-key to the engine in place of the client token', async () => {
    const { router, engine } = await start({ workers: { apiKey: 'engine-key' } });
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'sk-client-secret', maxRetries: 0 });
    await client.chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(engine.seen.map((s) => s.headers.authorization)).toEqual(['Bearer engine-key']);
  });

  it('answers preflights itself (never forwarded), with the configured origins only', async () => {
    const { router, engine } = await start({ server: { corsAllowedOrigins: ['https://app.example'] } });
    const preflight = (origin: string) =>
      fetch(`${router.url}/v1/files`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST' },
      });
    const ok = await preflight('https://app.example');
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const other = await preflight('https://evil.example');
    expect(other.status).toBe(204);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(engine.seen).toEqual([]);
  });

  it('a reset connection: a generic message with the request id; the detail only in the log', async () => {
    stack = await startStack({
      engines: 1,
      engineOptions: { failure: { mode: 'reset' } },
      config: { retry: { disabled: true }, log: { level: 'warn' } },
      router: { healthLoop: false, metricsListener: false },
    });
    const client = new OpenAI({ baseURL: `${stack.router.url}/v1`, apiKey: 'sk-x', maxRetries: 0 });
    const err = await client.chat.completions
      .create(
        { model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'x-request-id': 'req-reset-9' } },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    const apiError = err as APIError;
    expect(apiError.status).toBe(502);
    expect(apiError.message).toContain('worker connection failed (request id req-reset-9)');
    expect(apiError.message).not.toMatch(/ECONN|UND_ERR|socket|other side closed/i);
    const line = stack.logs.find(
      (l) => l.includes('req-reset-9') && /ECONNRESET|UND_ERR_SOCKET|other side closed/.test(l),
    );
    expect(line, stack.logs.join('\n')).toBeDefined();
  });

  it('a stream the engine cuts: the SDK sees "upstream stream error" with the request id', async () => {
    stack = await startStack({
      engines: 1,
      engineOptions: { tokens: 10, failure: { mode: 'midstream', cutAfterChunks: 2 } },
      config: { log: { level: 'warn' } },
      router: { healthLoop: false, metricsListener: false },
    });
    const client = new OpenAI({ baseURL: `${stack.router.url}/v1`, apiKey: 'sk-x', maxRetries: 0 });
    const stream = await client.chat.completions.create(
      { model: 'sim-model', messages: [{ role: 'user', content: 'hi' }], stream: true },
      { headers: { 'x-request-id': 'req-cut-9' } },
    );
    const failure = await (async () => {
      for await (const _chunk of stream);
    })().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).message).toContain('upstream stream error (request id req-cut-9)');
    expect((failure as APIError).message).not.toMatch(/ECONN|UND_ERR|socket|other side closed|terminated/i);
    await expect
      .poll(() => stack!.logs.find((l) => l.includes('upstream stream broke') && l.includes('req-cut-9')))
      .toBeDefined();
  });

  it('a port nothing listens on: the same, ECONNREFUSED and the address only in the log', async () => {
    const port = await deadPort();
    const logs: string[] = [];
    router = await startNodeRouter(
      testConfig([`http://127.0.0.1:${port}`], {
        health: { disabled: true },
        workers: { models: ['sim-model'] },
        retry: { disabled: true },
        log: { level: 'warn' },
      }),
      { logSink: (l) => logs.push(l), metricsListener: false, healthLoop: false, startup: false },
    );
    const res = await fetch(`${router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'req-dead-1' },
      body: JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(JSON.parse(text).error.message).toBe('worker connection failed (request id req-dead-1)');
    expect(text).not.toContain(String(port));
    expect(text).not.toMatch(/ECONNREFUSED|fetch failed/);
    expect(logs.some((l) => l.includes('req-dead-1') && l.includes('ECONNREFUSED'))).toBe(true);
  });

  it('requests node:http rejects get a short answer from the Node router (431, 400)', async () => {
    const { router } = await start();
    const big = splitAnswer(await rawExchange(router.port, OVERSIZED));
    expect(big.status).toBe(431);
    expect(big.body.length).toBeLessThan(512);
    const bad = splitAnswer(await rawExchange(router.port, MALFORMED));
    expect(bad.status).toBe(400);
    expect(bad.body.length).toBeLessThan(512);
    expect(bad.body).not.toContain('NOT-HTTP');
  });

  it('the clientError handler answers with a short JSON body and closes the connection', async () => {
    plain = createServer((_req, res) => res.end('ok'));
    plain.on('clientError', handleClientError);
    await new Promise<void>((resolve) => plain!.listen(0, '127.0.0.1', resolve));
    const { port } = plain.address() as AddressInfo;
    for (const [bytes, status] of [
      [OVERSIZED, 431],
      [MALFORMED, 400],
    ] as const) {
      const answer = splitAnswer(await rawExchange(port, bytes));
      expect(answer.status).toBe(status);
      expect(answer.headers).toContain('connection: close');
      expect(answer.headers).toContain(`content-length: ${answer.body.length}`);
      const body = JSON.parse(answer.body) as { error: { type: string; code: string } };
      expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'bad_request' });
      expect(answer.body.length).toBeLessThan(200);
      expect(answer.body).not.toContain('aaaa');
    }
    expect(clientErrorAnswer('HPE_HEADER_OVERFLOW')).toMatch(/^HTTP\/1\.1 431 /);
    expect(clientErrorAnswer(undefined)).toMatch(/^HTTP\/1\.1 400 /);
  });
});
