/**
 * SMG compatibility over real loopback HTTP: no free resend of a body of 1 MiB or more on a stale
 * pooled connection, request bodies streamed through unread when retries are off, and the
 * x-smg-routed-worker-id header (off with --no-routed-worker-header).
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startNodeRouter } from '../../src/adapters/node/server.ts';
import type { RouterConfig } from '../../src/core/config/schema.ts';
import { driveClock, FakeClock, seededRandom } from '../support/fake-clock.ts';
import { type Running, startStack, testConfig } from '../support/harness.ts';
import { staleConnectionServer } from '../support/net.ts';

const MiB = 1 << 20;

/** A chat body of about `bytes` bytes (the prompt pads it). */
function chatOfSize(bytes: number): string {
  const base = { model: 'sim-model', messages: [{ role: 'user', content: '' }], max_tokens: 4 };
  const pad = bytes - JSON.stringify(base).length;
  base.messages[0]!.content = 'a'.repeat(Math.max(0, pad));
  return JSON.stringify(base);
}

function post(url: string, body: string) {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Overrides = Parameters<typeof testConfig>[1];

/** A router over one engine whose reused connections go stale; the first request warms the pool. */
async function staleStack(overrides: Overrides) {
  const stale = await staleConnectionServer();
  const clock = new FakeClock();
  const config: RouterConfig = testConfig([stale.url], {
    workers: { models: ['sim-model'] },
    health: { disabled: true },
    policy: { name: 'cache_aware' }, // reads the prompt: the body is buffered, retries or not
    ...overrides,
  });
  const router = await startNodeRouter(config, { logSink: () => {}, clock, random: seededRandom(1) });
  cleanups.push(() => stale.close());
  cleanups.push(() => router.close(0));
  const warm = await post(router.url, chatOfSize(100));
  expect(warm.status).toBe(200);
  await warm.text();
  expect(stale.requests()).toBe(1);
  return { stale, router, clock };
}

describe('stale pooled connections (SMG: no free resend of a body of 1 MiB or more)', () => {
  it('resends a small body for free even with retries disabled', async () => {
    const { stale, router } = await staleStack({ retry: { disabled: true } });
    const res = await post(router.url, chatOfSize(10_000));
    expect(res.status).toBe(200);
    await res.text();
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(stale.requests()).toBe(3); // warm-up, the stale send, the free resend
    expect(await metric(router.url, 'vllm_router_stale_connection_resends_total')).toBe(1);
  });

  it('does not resend a 1.5 MiB body with retries disabled: the stale send is the only attempt', async () => {
    const { stale, router } = await staleStack({ retry: { disabled: true } });
    const res = await post(router.url, chatOfSize(1.5 * MiB));
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { code: string } };
    expect(body.error.code).toBe('upstream_unreachable');
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(stale.requests()).toBe(2); // warm-up and the stale send only
    expect(await metric(router.url, 'vllm_router_stale_connection_resends_total')).toBe(0);
  });

  it('counts a stale send of a 1.5 MiB body as a failed attempt that the retry rules retry', async () => {
    const { stale, router, clock } = await staleStack({ circuitBreaker: { disabled: true } });
    const res = await driveClock(clock, post(router.url, chatOfSize(1.5 * MiB)));
    expect(res.status).toBe(200);
    await res.text();
    expect(res.headers.get('x-router-attempts')).toBe('2'); // a real retry, not a free resend
    expect(stale.requests()).toBe(3);
    expect(await metric(router.url, 'vllm_router_stale_connection_resends_total')).toBe(0);
    expect(await metric(router.url, 'vllm_router_retries_total')).toBe(1);
  });
});

/** An engine that reports when the first body bytes of a request arrive, and answers at the end. */
async function countingEngine() {
  let firstBytes: () => void = () => {};
  const gotFirstBytes = new Promise<void>((resolve) => {
    firstBytes = resolve;
  });
  let received = 0;
  const answer = JSON.stringify({ object: 'list', data: [{ id: 'sim-model', object: 'model' }] });
  const server: Server = createServer((req: IncomingMessage, res) => {
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      firstBytes();
    });
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
      res.end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    gotFirstBytes,
    received: () => received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('request bodies with retries disabled (SMG: streamed at any size)', () => {
  it('streams a 512 KiB upload to the engine before the client finished sending it', async () => {
    const engine = await countingEngine();
    const router = await startNodeRouter(
      testConfig([engine.url], {
        workers: { models: ['sim-model'] },
        health: { disabled: true },
        retry: { disabled: true },
      }),
      { logSink: () => {} },
    );
    cleanups.push(() => engine.close());
    cleanups.push(() => router.close(0));
    const body = Buffer.alloc(512 * 1024, 7); // an audio upload, not JSON
    const half = body.length >> 1;
    const { hostname, port } = new URL(router.url);
    let answered: (status: number) => void = () => {};
    const status = new Promise<number>((resolve) => {
      answered = resolve;
    });
    const req = httpRequest({
      host: hostname,
      port,
      method: 'POST',
      path: '/v1/audio/transcriptions',
      headers: { 'content-type': 'audio/wav', 'content-length': body.length },
    });
    req.on('response', (res) => {
      res.resume();
      answered(res.statusCode ?? 0);
    });
    req.write(body.subarray(0, half));
    // A router that buffers reserves the declared length before it reads: the gauge shows it.
    let buffered = 0;
    let arrived = false;
    void engine.gotFirstBytes.then(() => {
      arrived = true;
    });
    while (!arrived && buffered === 0) {
      buffered = await metric(router.url, 'vllm_router_buffered_request_bytes');
    }
    expect(buffered).toBe(0);
    await engine.gotFirstBytes; // the client has sent half the body: the engine reads it already
    req.end(body.subarray(half));
    expect(await status).toBe(200);
    expect(engine.received()).toBe(body.length);
    expect(await metric(router.url, 'vllm_router_retry_forfeited_total')).toBe(0); // nothing forfeited
  });

  it('still reads a JSON body: malformed JSON is a 400 that never reaches the engine', async () => {
    const engine = await countingEngine();
    const router = await startNodeRouter(
      testConfig([engine.url], {
        workers: { models: ['sim-model'] },
        health: { disabled: true },
        retry: { disabled: true },
        policy: { name: 'round_robin' },
      }),
      { logSink: () => {} },
    );
    cleanups.push(() => engine.close());
    cleanups.push(() => router.close(0));
    const res = await post(router.url, `${chatOfSize(600 * 1024).slice(0, -1)}`);
    expect(res.status).toBe(400);
    expect(engine.received()).toBe(0);
  });
});

describe('x-smg-routed-worker-id (SMG #2183)', () => {
  let stack: Running | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  async function rawCompletion(routedWorkerHeader: boolean) {
    stack = await startStack({ engines: 1, config: { server: { routedWorkerHeader } } });
    const client = new OpenAI({ baseURL: `${stack.router.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const { response } = await client.chat.completions
      .create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    return { response, engineUrl: stack.engines[0]!.url };
  }

  it('names the answering worker under both header names, the same value', async () => {
    const { response, engineUrl } = await rawCompletion(true);
    expect(response.headers.get('x-routed-worker-id')).toBe(engineUrl);
    expect(response.headers.get('x-smg-routed-worker-id')).toBe(engineUrl);
  });

  it('leaves both headers off with --no-routed-worker-header', async () => {
    const { response } = await rawCompletion(false);
    expect(response.headers.get('x-routed-worker-id')).toBeNull();
    expect(response.headers.get('x-smg-routed-worker-id')).toBeNull();
    expect(response.headers.get('x-request-id')).not.toBeNull();
  });
});
