/**
 * Node serves the JSON inference routes itself (src/adapters/node/direct.ts): the handler is called
 * without the app, answers are written with their length, streams are relayed chunk by chunk and
 * cancelled when the client leaves, a handler that throws is a 500, and everything else (other
 * paths and methods, an unusual Host or target) still reaches the app.
 */
import { request } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeServer, type NodeServer } from '../../../src/adapters/node/listen.ts';
import type { Answer } from '../../../src/core/contracts/answer.ts';
import type { Inbound } from '../../../src/core/http/inbound.ts';
import type { Inference } from '../../../src/core/http/inference.ts';

interface Seen {
  route: string;
  inbound: Inbound;
  body: string;
}

function fakeInference(answer: (seen: Seen) => Answer | Promise<Answer>) {
  const served: Seen[] = [];
  const internal: string[] = [];
  const inference: Inference = {
    jsonRoutes: new Set(['/v1/chat/completions', '/v1/completions']),
    async serve(route, inbound) {
      const body = new TextDecoder().decode(await inbound.bytes());
      const seen = { route, inbound, body };
      served.push(seen);
      return answer(seen);
    },
    internalError(path) {
      internal.push(path);
      return {
        status: 500,
        headers: { 'content-type': 'application/json' },
        body: new TextEncoder().encode('{}'),
      };
    },
  };
  return { inference, served, internal };
}

let server: NodeServer | undefined;
afterEach(async () => {
  server?.closeAllConnections?.();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

async function listen(inference: Inference): Promise<{ url: string; appCalls: string[] }> {
  const appCalls: string[] = [];
  server = createNodeServer(
    (req) => {
      appCalls.push(`${req.method} ${new URL(req.url).pathname}`);
      return new Response('from the app', { status: 299 });
    },
    '127.0.0.1',
    inference,
  );
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, appCalls };
}

/** What the server's connections hand the kernel, one entry per write (a writev's chunks joined). */
function socketWrites(): string[] {
  const writes: string[] = [];
  const text = (chunk: unknown, encoding: BufferEncoding) =>
    (typeof chunk === 'string' ? Buffer.from(chunk, encoding) : (chunk as Buffer)).toString('latin1');
  server?.on('connection', (socket: Socket) => {
    const write = socket._write.bind(socket);
    const writev = socket._writev?.bind(socket);
    socket._write = (chunk, encoding, done) => {
      writes.push(text(chunk, encoding));
      write(chunk, encoding, done);
    };
    if (writev)
      socket._writev = (chunks, done) => {
        writes.push(chunks.map((c) => text(c.chunk, c.encoding)).join(''));
        writev(chunks, done);
      };
  });
  return writes;
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function send(url: string, path: string, init: { method?: string; body?: string; host?: string }) {
  return new Promise<Reply>((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (init.host) headers.host = init.host;
    const req = request(`${url}${path}`, { method: init.method ?? 'POST', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

const bytes = (text: string) => new TextEncoder().encode(text);

describe('Node direct inference routes', () => {
  it('serves a JSON route without the app and writes the answer with its length', async () => {
    const { inference, served } = fakeInference(() => ({
      status: 201,
      headers: { 'content-type': 'application/json', 'x-request-id': 'r1' },
      body: bytes('{"ok":true}'),
    }));
    const { url, appCalls } = await listen(inference);
    const reply = await send(url, '/v1/chat/completions?trace=1', { body: '{"model":"m"}' });
    expect(reply).toMatchObject({ status: 201, body: '{"ok":true}' });
    expect(reply.headers['content-length']).toBe('11');
    expect(reply.headers['x-request-id']).toBe('r1');
    expect(appCalls).toEqual([]);
    const [seen] = served;
    expect(seen?.route).toBe('/v1/chat/completions');
    expect(seen?.body).toBe('{"model":"m"}');
    expect(seen?.inbound.target).toBe('/v1/chat/completions?trace=1');
    expect(seen?.inbound.url).toBe(`${url}/v1/chat/completions?trace=1`);
    expect(seen?.inbound.header('content-type')).toBe('application/json');
    expect(seen?.inbound.peer).toMatch(/127\.0\.0\.1/);
  });

  it('leaves other paths, other methods, an unusual Host and an unusual target to the app', async () => {
    const { inference, served } = fakeInference(() => ({ status: 200, headers: {}, body: null }));
    const { url, appCalls } = await listen(inference);
    expect((await send(url, '/v1/models', { method: 'GET' })).status).toBe(299);
    expect((await send(url, '/v1/chat/completions', { method: 'PUT', body: '{}' })).status).toBe(299);
    expect((await send(url, '/v1/chat/completions/', { body: '{}' })).status).toBe(299);
    expect((await send(url, '/v1/chat/completions', { body: '{}', host: 'Router.Example' })).status).toBe(
      299,
    );
    expect((await send(url, '/v1/chat/completions?q=%7B"x"', { body: '{}' })).status).toBe(299);
    expect(served).toEqual([]);
    expect(appCalls).toHaveLength(5);
  });

  it('relays a streamed answer chunk by chunk, its headers in the same socket write as the first chunk', async () => {
    let pulls = 0;
    const { inference } = fakeInference(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: new ReadableStream<Uint8Array>({
        pull(controller) {
          pulls++;
          if (pulls <= 3) controller.enqueue(bytes(`data: ${pulls}\n\n`));
          else controller.close();
        },
      }),
    }));
    const { url } = await listen(inference);
    const writes = socketWrites();
    const reply = await send(url, '/v1/completions', { body: '{}' });
    expect(reply.status).toBe(200);
    expect(reply.body).toBe('data: 1\n\ndata: 2\n\ndata: 3\n\n');
    expect(reply.headers['content-length']).toBeUndefined();
    // One write (one syscall) for the head and the first chunk, not one for each.
    expect(writes[0]).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n[0-9a-f]+\r\ndata: 1\n\n/);
  });

  it('sends the head at once for an answer that says its first chunk is not in (flushHead)', async () => {
    let release: (() => void) | undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const order: string[] = [];
    const { inference } = fakeInference(() => ({
      status: 503,
      headers: { 'content-type': 'text/plain' },
      flushHead: true,
      body: new ReadableStream<Uint8Array>({
        async pull(controller) {
          await gate;
          controller.enqueue(bytes('busy'));
          controller.close();
        },
      }),
    }));
    const { url } = await listen(inference);
    // Without the head sent first, nothing reaches the client until the body is released.
    const fallback = setTimeout(() => {
      order.push('released by the fallback');
      release?.();
    }, 2000);
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(`${url}/v1/completions`, { method: 'POST' }, (res) => {
        order.push(`head ${res.statusCode}`);
        release?.();
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      req.end('{}');
    });
    clearTimeout(fallback);
    expect(order).toEqual(['head 503']);
    expect(body).toBe('busy');
  });

  it('cancels a streamed answer when the client leaves', async () => {
    let cancelled: (reason: unknown) => void = () => {};
    const gone = new Promise((resolve) => {
      cancelled = resolve;
    });
    const { inference } = fakeInference(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes('data: first\n\n'));
        },
        cancel(reason) {
          cancelled(reason ?? 'cancelled');
        },
      }),
    }));
    const { url } = await listen(inference);
    await new Promise<void>((resolve, reject) => {
      const req = request(`${url}/v1/completions`, { method: 'POST' }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => {});
      req.once('error', reject);
      req.end('{}');
    });
    await expect(gone).resolves.toBeDefined();
  });

  it('answers 500 from the handler that threw, naming the route', async () => {
    const { inference, internal } = fakeInference(() => {
      throw new Error('a bug');
    });
    const { url } = await listen(inference);
    const reply = await send(url, '/v1/chat/completions', { body: '{}' });
    expect(reply.status).toBe(500);
    expect(internal).toEqual(['/v1/chat/completions']);
  });

  it('closes the connection after answering a request whose body it did not read', async () => {
    const inference: Inference = {
      jsonRoutes: new Set(['/v1/completions']),
      serve: async () => ({
        status: 413,
        headers: { 'content-type': 'application/json' },
        body: bytes('{}'),
      }),
      internalError: () => ({ status: 500, headers: {}, body: null }),
    };
    const { url } = await listen(inference);
    const reply = await new Promise<Reply>((resolve, reject) => {
      const req = request(
        `${url}/v1/completions`,
        { method: 'POST', headers: { 'content-length': '100000' } },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' }));
        },
      );
      req.on('error', reject);
      req.write('{"partial": ');
    });
    expect(reply.status).toBe(413);
    expect(reply.headers.connection).toBe('close');
  });
});
